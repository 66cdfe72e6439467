"""The stylesheet of card.html, inline in the page (its content-security policy allows inline
styles and nothing from outside).

Screen: one column up to 1240 px, figures beside their tables; under 760 px (a phone) the
figures go above their tables, every table scrolls sideways in its own box and a figure keeps
a readable width, scrolling in its own box too, so the page itself never scrolls sideways.
Print: A4 with 11 mm margins, small type, no navigation, links as plain text, nothing split
across a page that should stay whole (a finding with its example, a figure, a table); with three
findings or more, page 1 holds the evaluator, the gate and the findings, page 2 the methods;
with fewer (an untrusted card has none), the methods follow the findings on page 1. Every text
colour keeps a contrast of at least 4.5:1 against its background, the greyed statistics of an
untrusted card included (#59636e on #f6f8fa: 5.7:1).
"""

CARD_CSS = """
:root{--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--link:#0550ae;
--fail:#a40e26;--failbg:#ffebe9;--pass:#116329;--passbg:#dafbe1;--warn:#6c4400;--warnbg:#fff8c5}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);
background:#fff;margin:0}
main{max-width:1240px;margin:0 auto;padding:14px 24px 36px}
a{color:var(--link)}
h1{font-size:22px;margin:0 0 2px}
h2{font-size:17px;margin:18px 0 6px;padding-bottom:2px;border-bottom:2px solid #eaeef2}
h3{font-size:15px;margin:14px 0 4px}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);
padding:0 3px;border-radius:3px;word-break:break-all}
.sig{margin:0 0 6px;color:var(--mute);font-size:13px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:4px 0 0;
font-size:13px}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0}
nav.toc{font-size:13px;display:flex;flex-wrap:wrap;gap:2px 14px;margin:6px 0}
.banner{border-left:5px solid var(--fail);background:var(--failbg);padding:8px 12px;margin:10px 0;
font-size:14px}
.banner strong{color:var(--fail)}
.verdict{font-weight:700}
.verdict-pass{color:var(--pass)}
.verdict-warn{color:var(--warn)}
.verdict-fail{color:var(--fail)}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;font-weight:650}
.badge-pass{background:var(--passbg);color:var(--pass)}
.badge-fail{background:var(--failbg);color:var(--fail)}
.badge-warn,.badge-inconclusive,.badge-unclear{background:var(--warnbg);color:var(--warn)}
table{border-collapse:collapse;font-size:12.5px;margin:4px 0 8px}
th,td{border:1px solid var(--line);padding:2px 6px;text-align:right;vertical-align:top}
th{background:var(--soft);font-weight:600}
.l{text-align:left}
caption{caption-side:top;text-align:left;font-size:12px;color:var(--mute);padding:1px 0}
tr:target,figure:target,li:target{outline:2px solid var(--link);outline-offset:1px}
ol.findings{padding-left:22px;margin:4px 0}
li.finding{margin:0 0 12px}
.finding .text{font-weight:600;margin:0}
.finding .meta{font-size:12.5px;color:var(--mute);margin:1px 0 3px}
.example{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px}
.pane{border:1px solid var(--line);border-radius:4px;padding:3px 8px;font-size:12.5px;
background:var(--soft)}
.pane p{margin:0}
.pane .head{font-weight:600;color:var(--mute);font-size:12px}
del{background:var(--failbg);color:#82071e;text-decoration:none}
ins{background:var(--passbg);color:#0f5323;text-decoration:none}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px;align-items:start}
figure{margin:2px 0 6px}
figcaption{font-size:12px;color:var(--mute)}
.summary{margin:2px 0 4px}
ul.left-out{margin:2px 0 6px;padding-left:20px;font-size:12.5px}
.note{color:var(--mute);font-size:12px;margin:2px 0}
.notrun p{margin:3px 0;font-size:13px}
.untrusted{color:var(--mute)}
.untrusted .stamp{display:inline-block;background:var(--soft);border:1px dashed var(--mute);
color:var(--mute);padding:0 6px;margin:0 0 4px;font-size:12px;font-weight:650}
.untrusted table,.untrusted figure,.untrusted td,.untrusted th{background:var(--soft);
color:var(--mute)}
.untrusted .badge{background:#eaeef2;color:#4a525c}
footer{margin-top:16px;font-size:12px;color:var(--mute)}
.scroll{max-width:100%;overflow-x:auto}
figure{max-width:100%;overflow-x:auto}
@media screen and (max-width:760px){
main{padding:10px 12px 28px}
.grid2,.example{grid-template-columns:minmax(0,1fr)}
dl.facts{grid-template-columns:minmax(0,1fr)}
dl.facts dd{margin:0 0 4px}
}
@page{size:A4;margin:11mm 11mm 11mm}
@media print{
body{font-size:8pt;line-height:1.28}
main{max-width:none;padding:0}
nav.toc{display:none}
a{color:inherit;text-decoration:none}
h1{font-size:13.5pt}
h2{font-size:10.5pt;margin:7pt 0 3pt}
h3{font-size:9.4pt;margin:5pt 0 2pt}
.sig,dl.facts,.finding .meta,figcaption,.note,caption,ul.left-out,footer{font-size:7.4pt}
code{font-size:7.2pt}
table{font-size:7.2pt;margin:2pt 0 4pt}
th,td{padding:0 3pt}
.banner{font-size:8.4pt;padding:4pt 8pt;margin:5pt 0}
li.finding{margin:0 0 5pt;break-inside:avoid}
.pane{font-size:7.3pt;padding:1pt 5pt}
.pane .head{font-size:7pt}
.grid2{gap:10pt}
figure,table,.example,section.method>h3{break-inside:avoid}
h2,h3{break-after:avoid}
section#methods.newpage{break-before:page}
footer{margin-top:6pt}
.notrun p{font-size:7.6pt;margin:1pt 0}
.untrusted .stamp{font-size:7.2pt;margin:0 0 2pt}
}
"""
