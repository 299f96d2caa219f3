// scripts/release.sh builds from a copy of the commit in which this file names it.
let buildCommit: String? = nil
