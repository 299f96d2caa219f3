/// The console's style sheet: system fonts only (no web font), one column on a phone.
enum ConsoleStyle {
    static let text = #"""
        :root { --ink: #1f2933; --muted: #5f6b7a; --line: #d9dee5; --paper: #f5f7fa; --card: #fff;
          --active: #15803d; --grace: #d97706; --retry: #dc2626; --expired: #6b7280; --revoked: #7f1d1d; --accent: #1d4ed8; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
          color: var(--ink); background: var(--paper); }
        code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
        a { color: var(--accent); }
        h1 { font-size: 20px; margin: 0 0 8px; overflow-wrap: anywhere; }
        h2 { font-size: 16px; margin: 0 0 6px; overflow-wrap: anywhere; }
        h3 { font-size: 14px; margin: 12px 0 6px; }
        button { font: inherit; padding: 6px 12px; border: 1px solid var(--accent); background: var(--accent); color: #fff;
          border-radius: 6px; cursor: pointer; }
        button.quiet { background: transparent; color: var(--accent); }
        input { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; min-width: 0; }
        .top { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; padding: 10px 16px; background: var(--card);
          border-bottom: 1px solid var(--line); }
        .brand { font-weight: 700; color: var(--ink); text-decoration: none; }
        .search { display: flex; gap: 6px; flex: 1 1 320px; }
        .search input { flex: 1; }
        main { padding: 16px; max-width: 1240px; margin: 0 auto; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px; margin-bottom: 14px; }
        .signin { max-width: 520px; margin: 40px auto; }
        .signin form { display: flex; gap: 8px; }
        .signin input { flex: 1; }
        .error { color: var(--retry); overflow-wrap: anywhere; }
        .muted { color: var(--muted); }
        .failed { color: #b42318; }
        td.target { word-break: break-all; }
        .grid { display: grid; gap: 14px; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); }
        .counts { display: grid; gap: 8px; grid-template-columns: repeat(auto-fit, minmax(110px, 1fr)); }
        .count { border-radius: 8px; padding: 8px 10px; color: #fff; }
        .count strong { display: block; font-size: 22px; }
        .count.active, .badge.active { background: var(--active); }
        .count.grace_period, .badge.grace_period { background: var(--grace); }
        .count.billing_retry, .badge.billing_retry { background: var(--retry); }
        .count.expired, .badge.expired { background: var(--expired); }
        .count.revoked, .badge.revoked { background: var(--revoked); }
        .badge { display: inline-block; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 12px; vertical-align: middle; }
        .badge.verified { background: var(--active); }
        .badge.rejected { background: var(--retry); }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 4px 8px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { color: var(--muted); font-weight: 600; }
        td { overflow-wrap: anywhere; }
        .entitlement { border-radius: 8px; padding: 12px 14px; margin-bottom: 14px; color: #fff; font-size: 16px; }
        .entitlement strong { font-size: 20px; display: block; }
        .entitlement.entitled { background: var(--active); }
        .entitlement.not-entitled { background: var(--retry); }
        dl.state { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 8px 0; }
        dl.state dt { color: var(--muted); }
        dl.state dd { margin: 0; overflow-wrap: anywhere; }
        .timeline-box { margin-top: 10px; }
        svg { display: block; width: 100%; }
        svg text { font-size: 11px; fill: var(--muted); }
        .period { fill: var(--accent); cursor: pointer; }
        .period.trial { fill: #60a5fa; }
        .period.upgraded { fill: #93a3b8; }
        .period.revoked { fill: var(--revoked); }
        .period:focus, .mark:focus { outline: 2px solid var(--ink); }
        .span.active { fill: var(--active); }
        .span.grace_period { fill: var(--grace); }
        .span.billing_retry { fill: var(--retry); }
        .span.expired { fill: var(--expired); }
        .span.revoked { fill: var(--revoked); }
        .shade, .span { cursor: pointer; }
        .shade.grace_period { fill: var(--grace); fill-opacity: .18; }
        .shade.billing_retry { fill: var(--retry); fill-opacity: .16; }
        .mark { cursor: pointer; }
        .mark line { stroke-width: 2; }
        .mark.revocation line, .mark.revocation path { stroke: var(--revoked); fill: var(--revoked); }
        .mark.product_change line, .mark.product_change path { stroke: #7c3aed; fill: #7c3aed; }
        .mark.auto_renew_off line, .mark.auto_renew_off path { stroke: #b45309; fill: #fff; stroke-dasharray: 3 2; }
        .mark.auto_renew_on line, .mark.auto_renew_on path { stroke: var(--active); fill: var(--active); stroke-dasharray: 3 2; }
        .mark.renewal_product_change line, .mark.renewal_product_change path { stroke: #7c3aed; fill: #fff; stroke-dasharray: 3 2; }
        .mark path { stroke-width: 1.5; }
        .axis { stroke: var(--muted); }
        .tick { stroke: var(--line); }
        .now { stroke: var(--ink); stroke-dasharray: 4 3; }
        .asof { stroke: var(--accent); stroke-width: 2; }
        .axis-hit { fill: transparent; cursor: crosshair; pointer-events: all; }
        .bar rect { cursor: default; }
        .t0 { fill: #2563eb; background: #2563eb; } .t1 { fill: #16a34a; background: #16a34a; } .t2 { fill: #dc2626; background: #dc2626; }
        .t3 { fill: #d97706; background: #d97706; } .t4 { fill: #7c3aed; background: #7c3aed; } .t5 { fill: #0891b2; background: #0891b2; }
        .t6 { fill: #db2777; background: #db2777; } .t7 { fill: #6b7280; background: #6b7280; }
        .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 0; margin: 6px 0 0; list-style: none; }
        .legend li { display: flex; align-items: center; gap: 6px; }
        .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; }
        .swatch.s-period { background: var(--accent); } .swatch.s-trial { background: #60a5fa; }
        .swatch.s-grace { background: var(--grace); opacity: .5; } .swatch.s-retry { background: var(--retry); opacity: .45; }
        .swatch.s-revocation { background: var(--revoked); } .swatch.s-change { background: #7c3aed; }
        .swatch.s-renew { background: #fff; border: 2px dashed #b45309; }
        .panel { border-top: 1px solid var(--line); margin-top: 10px; padding-top: 6px; }
        .panel:empty { display: none; }
        .choices { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0; }
        .choices button { background: transparent; color: var(--accent); padding: 2px 8px; }
        .choices button[aria-pressed="true"] { background: var(--accent); color: #fff; }
        pre.json { background: var(--paper); border: 1px solid var(--line); border-radius: 6px; padding: 8px; max-height: 360px;
          overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
        .results li { margin: 4px 0; overflow-wrap: anywhere; }
        @media (min-width: 900px) {
          dl.state { grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr); }
        }
        @media (max-width: 600px) {
          main { padding: 10px; }
          .top { padding: 8px 10px; }
          .search { flex-basis: 100%; order: 3; }
          dl.state { grid-template-columns: 1fr; }
          dl.state dd { margin-bottom: 4px; }
        }
        """#
}
