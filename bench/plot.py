"""Draw the headline comparisons of bench/README.md as SVG bar charts in bench/plots/.

    pip install matplotlib        # a dev tool, not a ruda dependency
    python bench/plot.py          # rewrites bench/plots/*.svg

The figures come from the tables in bench/README.md (the one place they are written down): each
plot names a section, the table rows it draws and the columns of its contestants.  The SVGs keep
text as text and carry no date, so drawing the same tables again gives the same files.
"""
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
README = HERE / "README.md"
OUT = HERE / "plots"

# contestant column in the README table -> (legend label, colour), in the order they are drawn
CONTESTANTS = {"ruda": ("ruda", "#d62728"), "ruda wgpu": ("ruda", "#d62728"),
               "PyTorch": ("PyTorch", "#1f77b4"), "CuPy": ("CuPy", "#7f7f7f")}
ORDER = ("ruda", "PyTorch", "CuPy")

# (file, section heading, title, [(bar group label, table row label)], scale to TB/s)
PLOTS = [
    ("cuda_h200.svg", "## cuda", "cuda on an NVIDIA H200: f32, 1 GiB operands",
     [("add", "f32 add (TB/s)"), ("sum", "f32 sum (TB/s)")], 1.0),
    ("wgpu_h200.svg", "## wgpu", "wgpu on an NVIDIA H200 (Vulkan): f32, 1 GiB operands",
     [("add\nsync per call", "f32 add 1 GiB, sync per call (GB/s)"),
      ("add\n10 per sync", "f32 add, 10 per sync (GB/s)"),
      ("sum\nsync per call", "f32 sum 1 GiB, sync per call (GB/s)"),
      ("sum\n10 per sync", "f32 sum, 10 per sync (GB/s)")], 1e-3),
]


def section(text, heading):
    """The text of the README section whose heading starts with ``heading``."""
    m = re.search(rf"^{re.escape(heading)}.*?$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if m is None:
        sys.exit(f"bench/plot.py: no section {heading!r} in {README}")
    return m.group(1)


def first_table(body):
    """(text before it, header cells, {row label: cells}): ``body``'s first markdown table."""
    lines = body.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        sys.exit("bench/plot.py: a plotted section has no table")
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, cells = table[0], table[2:]          # table[1] is the |---| rule
    return "\n".join(lines[:start]), header, {c[0]: c for c in cells}


def number(cell):
    m = re.match(r"[0-9][0-9,]*(\.[0-9]+)?", cell)
    if m is None:
        sys.exit(f"bench/plot.py: no number in table cell {cell!r}")
    return float(m.group(0).replace(",", ""))


def draw(plt, name, heading, title, groups, scale, text):
    body = section(text, heading)
    before, header, rows = first_table(body)
    date = re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC", before)
    cols = sorted(((i, h) for i, h in enumerate(header) if h in CONTESTANTS),
                  key=lambda c: ORDER.index(CONTESTANTS[c[1]][0]))
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(groups), 3.4))
    width = 0.8 / len(cols)
    for k, (i, h) in enumerate(cols):
        label, colour = CONTESTANTS[h]
        xs, ys = [], []
        for g, (_, row) in enumerate(groups):
            if row not in rows:
                sys.exit(f"bench/plot.py: no row {row!r} in the table of {heading!r}")
            xs.append(g + (k - (len(cols) - 1) / 2) * width)
            ys.append(number(rows[row][i]) * scale)
        bars = ax.bar(xs, ys, width, label=label, color=colour)
        ax.bar_label(bars, fmt="%.3f", fontsize=7, padding=1)    # the table's figures, unrounded
    ax.set_xticks(range(len(groups)), [g for g, _ in groups], fontsize=8)
    ax.set_ylabel("TB/s (higher is better)", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(title + (f"\n{date.group(0)}, figures from bench/README.md" if date else ""),
                 fontsize=9)
    ax.legend(fontsize=8, frameon=False, ncols=len(cols), loc="upper center",
              bbox_to_anchor=(0.5, -0.2))
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / name, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return OUT / name


def main():
    import matplotlib
    matplotlib.use("svg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "ruda",
                                "font.family": "sans-serif"})
    import matplotlib.pyplot as plt
    text = README.read_text(encoding="utf-8")
    for spec in PLOTS:
        path = draw(plt, *spec, text)
        print(f"{path.relative_to(HERE.parent)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
