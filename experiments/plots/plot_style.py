"""The look every experiments/plot*.py shares: fonts, a fixed style per policy, context titles,
legends of drawn artists only, and an optional report of what a figure drew.

Imported by the plot scripts beside it; they put this file's folder on sys.path first, so they run
from any working directory:

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import plot_style

- setup() returns matplotlib.pyplot on the Agg backend with RC applied: every font is at least
  MIN_FONT_PT (9 pt). Scripts give sizes in points (or not at all), never "small"/"x-small",
  which scale below the base size.
- policy_style(label) is the same colour, marker and line style for a policy in every plot
  (POLICY_STYLES); labels not in the table get one of FALLBACK in order of first request.
- context_line(ctx, rate) is the "GPU ... | model ... | workload ... | rate ..." line of a title,
  from the plot_context.json that isim writes beside results.csv and plan.csv (load_context).
- legend(ax, ...) draws a legend of the artists that carry data; undrawn_legend_entries(ax)
  lists legend entries that no drawn artist matches.
- With ISIM_PLOT_REPORT=FILE in the environment, save(fig, path) also appends one JSON object per
  line to FILE: the PNG's name, the title text, the legend labels, the undrawn legend entries and
  the smallest font size in points. Tests read it; the PNG is the same with or without it.

Nothing here reads the clock or draws at random: the same inputs give the same PNG bytes.
"""

import json
import os

MIN_FONT_PT = 9
RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 11,
}

# policy label -> (colour, marker, line style, marker size, hollow marker). Min-waste's two
# estimators often coincide: the oracle is a thick solid line with large hollow diamonds, the
# history estimator a thin dashed line with small filled triangles, so either shows through.
POLICY_STYLES = {
    "discard": ("#D55E00", "x", ":", 7, False),
    "improved-discard": ("#E69F00", "v", "-.", 6, False),
    "preserve": ("#0072B2", "o", "-", 6, False),
    "swap": ("#009E73", "s", "--", 6, False),
    "min-waste": ("#CC79A7", "D", "-", 9, True),
    "min-waste (oracle)": ("#CC79A7", "D", "-", 9, True),
    "min-waste (history)": ("#000000", "^", "--", 5, False),
    "min-waste(estimator=history)": ("#000000", "^", "--", 5, False),
    "min-waste(estimator=oracle)": ("#CC79A7", "D", "-", 9, True),
    "lru": ("#56B4E9", "P", "-.", 7, False),
    "pensieve": ("#8C564B", "*", ":", 8, False),
}
FALLBACK = [("#7F7F7F", "h", "-", 6, False), ("#BCBD22", "<", "--", 6, False),
            ("#17BECF", ">", "-.", 6, False), ("#9467BD", "p", ":", 6, False)]
_fallback_of = {}


def policy_style(label):
    """Keyword arguments for ax.plot/ax.errorbar: colour, marker, line style, marker size."""
    s = POLICY_STYLES.get(label)
    if s is None:
        s = _fallback_of.setdefault(label, FALLBACK[len(_fallback_of) % len(FALLBACK)])
    colour, marker, ls, ms, hollow = s
    kw = {"color": colour, "marker": marker, "linestyle": ls, "markersize": ms,
          "linewidth": 2.2 if hollow else 1.4}
    if hollow:
        kw["markerfacecolor"] = "none"
        kw["markeredgewidth"] = 1.6
    return kw


def policy_colour(label):
    return policy_style(label)["color"]


def setup():
    """pyplot on the Agg backend with RC; ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update(RC)
    import matplotlib.pyplot as plt
    return plt


def load_context(path):
    """The plot_context.json at `path` as a dict, or {} when there is none. Malformed: ValueError
    naming the file."""
    if not path or not os.path.isfile(path):
        return {}
    try:
        with open(path) as f:
            ctx = json.load(f)
    except ValueError as e:
        raise ValueError("{}: not JSON: {}".format(path, e))
    if not isinstance(ctx, dict):
        raise ValueError("{}: expected a JSON object".format(path))
    return ctx


def context_beside(csv_path):
    """plot_context.json in the folder of `csv_path` (isim writes it there)."""
    return os.path.join(os.path.dirname(os.path.abspath(csv_path)), "plot_context.json")


def _names(ctx, key):
    v = ctx.get(key)
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) if v else None
    return str(v) if v else None


def context_line(ctx, rate=None, width=None):
    """'GPU A | model M | workload W | rate R': each from `ctx` (lists joined by commas); `rate`
    (text) replaces the context's own. Parts the context lacks read 'not recorded'. Longer than
    `width` characters: two lines, broken before the workload."""
    parts = []
    for key, name in (("gpu", "GPU"), ("model", "model"), ("workload", "workload")):
        parts.append("{} {}".format(name, _names(ctx, key) or "not recorded"))
    parts.append("rate {}".format(rate or _names(ctx, "rate") or "not recorded"))
    line = " | ".join(parts)
    if width and len(line) > width:
        return " | ".join(parts[:2]) + "\n" + " | ".join(parts[2:])
    return line


def rate_range(rates, unit="sessions/s"):
    """'4 sessions/s' or '1-16 sessions/s' for a list of numbers."""
    rs = sorted(set(rates))
    if not rs:
        return None
    if len(rs) == 1:
        return "{:g} {}".format(rs[0], unit)
    return "{:g}-{:g} {}".format(rs[0], rs[-1], unit)


def _has_data(artist):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.collections import Collection
    if not artist.get_visible():
        return False
    if isinstance(artist, Line2D):
        n = len(artist.get_xdata())
        line = artist.get_linestyle() not in ("None", "", " ", "none")
        mark = artist.get_marker() not in (None, "None", "", " ", "none")
        return (mark and n >= 1) or (line and n >= 2)
    if isinstance(artist, Rectangle):
        return artist.get_width() != 0 and artist.get_height() != 0
    if isinstance(artist, Collection):
        return len(artist.get_paths()) > 0
    return True


def _drawn(ax):
    """Every artist of `ax` that carries data (lines, bars, collections)."""
    out = [a for a in ax.lines if _has_data(a)]
    out += [a for a in ax.patches if _has_data(a)]
    out += [a for a in ax.collections if _has_data(a)]
    return out


def _labelled(ax):
    """(handle, label) of drawn artists whose label is meant for a legend, first of each label."""
    seen, out = set(), []
    for c in ax.containers:  # bars and error bars: the container carries the label
        lab = c.get_label()
        if lab and not lab.startswith("_") and lab not in seen:
            children = [a for a in c.get_children() if a is not None]
            if any(_has_data(a) for a in children):
                seen.add(lab)
                out.append((c, lab))
    for a in _drawn(ax):
        lab = a.get_label()
        if lab and not lab.startswith("_") and lab not in seen:
            seen.add(lab)
            out.append((a, lab))
    return out


def key_entry(ax, label, colour=None, marker=None, fillstyle=None, **kw):
    """A legend key for an encoding (a colour, or a marker) rather than for one artist: the key
    is listed only when a drawn line of `ax` has that colour, marker and fill style (each
    when given). Returns the handle, or None when nothing drawn matches."""
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    for a in _drawn(ax):
        if not isinstance(a, Line2D):
            continue
        if colour is not None and to_rgba(a.get_color()) != to_rgba(colour):
            continue
        if marker is not None and a.get_marker() != marker:
            continue
        if fillstyle is not None and a.get_fillstyle() != fillstyle:
            continue
        if marker is None and fillstyle is None:  # a colour: a short thick bar, no shape
            h = Line2D([], [], color=colour, linestyle="-", linewidth=6, label=label, **kw)
        else:
            h = Line2D([], [], color=colour or "grey", marker=marker or "o", linestyle="None",
                       label=label, fillstyle=fillstyle or "full", **kw)
        h.set_gid("isim-key")
        h._isim_key = (colour, marker, fillstyle)
        return h
    return None


def legend(ax, keys=(), **kw):
    """A legend of the drawn, labelled artists of `ax`, then the `keys` (key_entry results; None
    skipped). No legend when there is nothing to list."""
    keys = [k for k in keys if k is not None]
    ax._isim_keys = keys
    pairs = _labelled(ax) + [(k, k.get_label()) for k in keys]
    if not pairs:
        return None
    return ax.legend([h for h, _ in pairs], [lab for _, lab in pairs], **kw)


def legend_labels(fig):
    out = []
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for lg in legends:
        if lg is not None:
            out += [t.get_text() for t in lg.get_texts()]
    return out


def undrawn_legend_entries(fig):
    """Legend labels (of every axes of `fig`) that no drawn artist carries; keys made by
    key_entry count as drawn when their encoding is still on a drawn line."""
    bad = []
    for ax in fig.axes:
        lg = ax.get_legend()
        if lg is None:
            continue
        handles = lg.legend_handles if hasattr(lg, "legend_handles") else lg.legendHandles
        drawn = {lab for _, lab in _labelled(ax)}
        for text, h in zip(lg.get_texts(), handles):
            lab = text.get_text()
            if lab in drawn:
                continue
            src = [k for k in getattr(ax, "_isim_keys", []) if k.get_label() == lab]
            if src and key_entry(ax, lab, *src[0]._isim_key) is not None:
                continue
            bad.append(lab)
    return bad


def smallest_font_pt(fig):
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize"))
             if hasattr(t, "get_text") and t.get_text()]
    return min(sizes) if sizes else None


def titles(fig):
    out = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        out.append(fig._suptitle.get_text())
    out += [ax.get_title() for ax in fig.axes if ax.get_title()]
    return out


def save(fig, path, dpi=120):
    """Saves `fig` to `path` under a temporary name first (an interrupted run leaves no partial
    PNG under the final name), then reports it when ISIM_PLOT_REPORT is set."""
    tmp = path + ".partial.png"
    fig.savefig(tmp, dpi=dpi, metadata={"Software": None})
    os.replace(tmp, path)
    report = os.environ.get("ISIM_PLOT_REPORT")
    if report:  # after savefig: the tick labels exist only once the figure is drawn
        entry = {"file": os.path.basename(path), "titles": titles(fig),
                 "legend": legend_labels(fig), "undrawn": undrawn_legend_entries(fig),
                 "min_font_pt": smallest_font_pt(fig)}
        with open(report, "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
