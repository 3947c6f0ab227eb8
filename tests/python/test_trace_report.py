"""tools/trace/trace_report.py on hand-made CUPTI CSVs (the tracer itself needs a GPU)."""
import pathlib
import subprocess
import sys

REPORT = pathlib.Path(__file__).resolve().parents[2] / "tools" / "trace" / "trace_report.py"
HEADER = "kind,start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,regs,smem,name\n"


def row(kind, start, end, stream, corr, graph, node, name):
    return f"{kind},{start},{end},{stream},{corr},{graph},{node},10,128,32,0,{name}\n"


def run(tmp_path, text, *args):
    p = tmp_path / "trace.csv"
    p.write_text(text)
    return subprocess.run([sys.executable, str(REPORT), str(p), *args], capture_output=True, text=True)


def launch(t0, corr, slow_tail=0):
    # node 1 [0, 2000), node 2 on another stream [500, 1500), idle [2000, 2500), node 3 [2500, 4000 + tail)
    return (row("kernel", t0, t0 + 2000, 7, corr, 3, 1, "conv_a(Args)")
            + row("kernel", t0 + 500, t0 + 1500, 8, corr, 3, 2, "map_b(Args)")
            + row("memset", t0 + 2500, t0 + 4000 + slow_tail, 7, corr, 3, 3, "memset"))


def test_span_busy_idle_and_node_order(tmp_path):
    text = HEADER + row("kernel", 0, 50, 7, 1, 0, 0, "outside_the_graph(Args)")
    text += launch(1_000_000, 11) + launch(2_000_000, 12, slow_tail=2000)
    r = run(tmp_path, text, "--last", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "2 launches analysed, 3 nodes per launch" in lines[0]
    span = next(l for l in lines if l.startswith("span"))
    busy = next(l for l in lines if l.startswith("busy"))
    idle = next(l for l in lines if l.startswith("idle"))
    assert "5.0 us" in span and "min 4.0" in span and "max 6.0" in span  # median of 4.0 and 6.0
    assert "4.5 us" in busy  # 2.0 + (1.5 or 3.5): union of the three intervals
    assert "0.5 us" in idle
    table = [l for l in lines if l.strip() and l.split()[0].replace(".", "").isdigit()]
    names = [l.split()[-1] for l in table[:3]]
    assert names == ["conv_a(Args)", "map_b(Args)", "memset"]  # in start order
    third = table[2].split()
    assert third[0] == "2.5" and third[2] == "0.5"  # starts at 2.5 us after 0.5 us with nothing running


def test_last_keeps_the_newest_launches(tmp_path):
    text = HEADER + launch(1_000_000, 11, slow_tail=8000) + launch(2_000_000, 12) + launch(3_000_000, 13)
    r = run(tmp_path, text, "--last", "2")
    assert r.returncode == 0, r.stderr
    assert "max 4.0" in next(l for l in r.stdout.splitlines() if l.startswith("span"))


def test_no_graph_activity_is_an_error(tmp_path):
    r = run(tmp_path, HEADER + row("kernel", 0, 50, 7, 1, 0, 0, "k(Args)"))
    assert r.returncode != 0
    assert "no CUDA-graph activity" in r.stderr


def chain_launch(t0, corr):
    # conv_a [0, 2000); map_x on another stream [1000, 2900); conv_b [3000, 4000): waits 1.0 us after conv_a, right
    # after map_x; conv_c [3800, 5000) starts before conv_b ends (a programmatic launch): no wait
    return (row("kernel", t0, t0 + 2000, 7, corr, 3, 1, "conv_a(Args)")
            + row("kernel", t0 + 1000, t0 + 2900, 8, corr, 3, 2, "map_x(Args)")
            + row("kernel", t0 + 3000, t0 + 4000, 7, corr, 3, 3, "conv_b(Args)")
            + row("kernel", t0 + 3800, t0 + 5000, 7, corr, 3, 4, "conv_c(Args)"))


def test_chain_waits_name_the_gate(tmp_path):
    text = HEADER + chain_launch(1_000_000, 11) + chain_launch(2_000_000, 12)
    r = run(tmp_path, text, "--chain", "conv_", "--min-wait", "0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("waits on the chain"))
    assert "3 nodes matching 'conv_'" in lines[at]
    waits = [l for l in lines[at + 1:] if "<-" in l]
    assert len(waits) == 1, lines[at:]  # conv_c overlaps conv_b: not a wait
    fields = waits[0].split()
    assert fields[0] == "3.0" and fields[1] == "1.0" and fields[2] == "conv_b(Args)"
    assert "map_x(Args) (ended 2.9)" in waits[0]
    assert "1.0 us  waited on the chain in all" in lines[-1]


def test_chain_waits_below_the_threshold_are_not_listed(tmp_path):
    text = HEADER + chain_launch(1_000_000, 11)
    r = run(tmp_path, text, "--chain", "conv_", "--min-wait", "1.5")
    assert r.returncode == 0, r.stderr
    assert not [l for l in r.stdout.splitlines() if "<-" in l]
    assert "0.0 us  waited on the chain in all" in r.stdout.splitlines()[-1]
