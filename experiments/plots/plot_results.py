"""A sweep's results.csv as plot.py reads it: the rows checked, grouped by policy label and swept
rate (Table), and the rules that choose a rate to draw at (keeps_up, choose_waste_rate).

A policy label is the policy, its estimator when set, and the value of any swept key other than
arrival.rate and seed. Bad input exits 2 with a message naming the file, line and column (fail),
in plot.py's name: this module is its part.
"""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

WASTE = ["active", "preserved", "recompute", "swap_stall", "free"]
THINK = "trace.think_time_s"  # a multi-turn sweep's other x axis
REQUIRED = [
    "policy",
    "normalized_latency_s.mean",
    "normalized_latency_s.p99",
    "throughput_tokens_per_s",
    "throughput_sessions_per_s",
] + ["waste_share." + w for w in WASTE]


def fail(msg):
    print("plot.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_results(path):
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [r for r in reader if r]
    except OSError as e:
        fail("{}: cannot read: {}".format(path, e.strerror))
    except csv.Error as e:
        fail("{}: not CSV: {}".format(path, e))
    if not header:
        fail(path + ": empty (expected a results.csv header)")
    missing = [c for c in REQUIRED if c not in header]
    if "arrival.rate" not in header and THINK not in header:
        missing.append("arrival.rate")
    if missing:
        hint = ""
        if "arrival.rate" in missing:
            hint = " (the plots are against arrival rate: sweep arrival.rate, or " + THINK + ")"
        fail("{}: missing column(s): {}{}".format(path, ", ".join(missing), hint))
    if not rows:
        fail(path + ": no runs (only a header)")
    for n, r in enumerate(rows, start=2):
        if len(r) != len(header):
            fail("{}:{}: expected {} fields, found {}".format(path, n, len(header), len(r)))
    return header, rows


def label_columns(header):
    """Swept columns that tell policies apart, beyond the policy and its estimator."""
    p = header.index("policy")
    end = header.index("estimator") if "estimator" in header else p + 1
    return [c for c in header[p + 1:end] if c not in ("arrival.rate", "seed", THINK)]


class Table:
    def __init__(self, path, header, rows, x="arrival.rate"):
        self.path = path
        self.col = {c: i for i, c in enumerate(header)}
        extra = label_columns(header)
        has_est = "estimator" in self.col
        self.labels = []  # in order of first appearance (run order)
        self.base = {}  # label -> the policy and its estimator (the style table's key)
        self.groups = {}  # (label, rate) -> list of (line, row)
        for n, r in enumerate(rows, start=2):
            base = r[self.col["policy"]]
            if has_est and r[self.col["estimator"]]:
                base += " (" + r[self.col["estimator"]] + ")"
            label = base
            for c in extra:
                label += " {}={}".format(c, r[self.col[c]])
            if label not in self.labels:
                self.labels.append(label)
                self.base[label] = base
            rate = self.number(n, r, x)
            self.groups.setdefault((label, rate), []).append((n, r))

    def number(self, line, row, column):
        text = row[self.col[column]]
        try:
            return float(text)
        except ValueError:
            fail("{}:{}: {}: expected a number, got '{}'".format(self.path, line, column, text))

    def rates(self, label):
        return sorted(rate for (lab, rate) in self.groups if lab == label)

    def all_rates(self):
        return sorted({rate for (_, rate) in self.groups})

    def values(self, label, rate, column):
        return [self.number(n, r, column) for n, r in self.groups[(label, rate)]]

    def mean(self, label, rate, column):
        v = self.values(label, rate, column)
        return sum(v) / len(v)

    def style(self, label):
        """The policy's fixed style; labels that share a policy (other swept keys) keep its
        colour and marker and take the next line style."""
        kw = plot_style.policy_style(self.base[label])
        same = [lab for lab in self.labels if self.base[lab] == self.base[label]]
        k = same.index(label)
        if k:
            kw["linestyle"] = ["-", "--", ":", "-."][k % 4]
        return kw


def fmt_rate(r):
    return "{:g}".format(r)


OVERLOADED = "overloaded"
TTFT = "ttft_s.mean"
TTFT_GROWTH = 10  # fallback: mean TTFT at most 10x the policy's own at its lowest swept rate


def keeps_up(t, label, rate):
    """Whether every run of `label` at `rate` kept up with its arrivals: the `overloaded` column
    is 0 when results.csv has it (1 = the queue grew without bound). Without it, a queue that
    grows shows as a mean TTFT far above the unloaded one: every run's ttft_s.mean is at most
    TTFT_GROWTH x the label's mean TTFT at its lowest swept rate (which is assumed to keep up).
    None when neither column is there."""
    if OVERLOADED not in t.col and TTFT not in t.col:
        return None
    base = t.mean(label, t.rates(label)[0], TTFT) if OVERLOADED not in t.col else 0
    for n, r in t.groups[(label, rate)]:
        if OVERLOADED in t.col:
            v = r[t.col[OVERLOADED]]
            if v not in ("0", "1"):
                fail("{}:{}: {}: expected 0 or 1, got '{}'".format(t.path, n, OVERLOADED, v))
            if v == "1":
                return False
        elif t.number(n, r, TTFT) > TTFT_GROWTH * base:
            return False
    return True


def keep_up_rule(t):
    if OVERLOADED in t.col:
        return "no run overloaded"
    if TTFT in t.col:
        return "mean TTFT within {}x of the lowest rate's".format(TTFT_GROWTH)
    return "no overloaded or ttft_s.mean column to judge by"


def common_rates(t):
    common = None
    for label in t.labels:
        rs = set(t.rates(label))
        common = rs if common is None else common & rs
    return sorted(common or [])


def choose_waste_rate(t, asked):
    """(rate, why) of waste.png: `asked` when given (one of the swept rates every label ran, or
    exit 2), else the highest rate that every label ran and kept up with, else the lowest rate
    that every label ran."""
    common = common_rates(t)
    if not common:
        fail(t.path + ": no arrival rate was run by every policy; waste.png compares one rate")
    if asked is not None:
        if asked not in common:
            fail("--waste-rate (plot.waste_rate): {:g} is not a swept arrival rate that every "
                 "policy ran (expected one of {})".format(asked, ", ".join(fmt_rate(r) for r in common)))
        return asked, "the chosen rate (plot.waste_rate)"
    ok = [r for r in common if all(keeps_up(t, lab, r) for lab in t.labels)]
    if keeps_up(t, t.labels[0], common[0]) is None:
        return common[0], "the lowest rate ({})".format(keep_up_rule(t))
    if ok:
        return ok[-1], "the highest rate where every policy keeps up ({})".format(keep_up_rule(t))
    return common[0], ("the lowest rate, as at every rate some policy does not keep up "
                       "(keeping up: {})").format(keep_up_rule(t))
