#!/usr/bin/env python3
"""Checks that every command in README.md and docs/*.md runs as shown, or its help text does.

usage: check_readme.py ISIM [--calibrate ISIM_CALIBRATE] [--readme-only]

ISIM is the built isim binary; isim-calibrate is the one given, else the one beside ISIM. Run from anywhere: the
checkout is two folders above this file, and commands run from its root, as the pages say.

Which lines are commands (the convention the pages follow):
- in any fenced block, a line starting with `$ ` is a command; lines after it up to the next
  `$ ` line are its output, except that a command ending in `\\` continues on the next line;
- in a ```sh block, every line that is not blank and not a `#` comment is a command.
So a synopsis (`isim run EXPERIMENT.yaml ...` in a plain block) is not a command, and a
transcript's output is never run.

What is checked, per simple command (split at `&&`, `;`, `|`):
- `isim VERB ...`: `isim VERB --help` exits 0, every `--flag` the command gives appears in that
  help, and every file it reads that lives in the checkout (or in ../shared/data, when that is
  present) exists; outputs (`--out`, `-o`, `--trace-events`, `--plot`, and the OUT of `trace
  convert`, `trace gen` and `sweep merge`) are not checked. In README.md the cheap verbs (`run`,
  `list`, `trace stats`, `trace gen`, `profile show`, `--version`) are run for real, with
  every output sent to a temporary folder, and must exit 0.
- `isim-calibrate ...`: its `--help` exits 0 and the files it reads exist.
- `scripts/NAME ...`: the script exists and is executable (scripts/demo and scripts/test take
  minutes, so they are not run here; CI runs scripts/test itself).
- `python3 FILE ...`: FILE exists.
- anything else (cmp, cat, sbatch, ctest, a built tool under build/): in README.md an error (the
  manual shows only commands this test can check); in docs/*.md it is listed as not checked.
Relative links of every page must name an existing file, and an anchor into a page an existing
heading of it.

Exit 0 when everything holds, 1 otherwise (each failure names the page and line).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
REPO_DIRS = ("experiments/", "calibrate/", "traces/", "tests/", "docs/", "scripts/", "kernels/",
             "sim/", "cluster/", "policies/", "live/", "core/")
SUBVERBS = {"sweep": {"merge", "submit"}, "plan": {"merge", "submit"},
            "trace": {"convert", "gen", "stats"},
            "profile": {"show", "import", "analytic", "diff", "step"}, "model": {"import"}}
OUT_FLAGS = {"--out", "-o", "--trace-events", "--plot", "--csv"}
VALUE_FLAGS = {"-p", "--add"}  # their value is KEY=VALUE, never a file
RUN_IN_README = {("run",), ("list",), ("trace", "stats"), ("trace", "gen"), ("profile", "show"),
                 ("--version",)}
RUN_TIMEOUT_S = 60


class Page:
    def __init__(self, path):
        self.path = path
        self.rel = path.relative_to(ROOT).as_posix()
        self.lines = path.read_text(encoding="utf-8").split("\n")


def commands(page):
    """(line number, command text) of every command of a page, by the convention above."""
    out, in_block, lang, pending, start = [], False, "", None, 0
    for n, line in enumerate(page.lines, 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            in_block, lang = (not in_block), fence.group(1)
            pending = None
            continue
        if not in_block:
            continue
        if pending is not None:  # a continuation line of the previous command
            pending += " " + line.strip()
        elif line.startswith("$ "):
            pending, start = line[2:].strip(), n
        elif lang == "sh" and line.strip() and not line.lstrip().startswith("#"):
            pending, start = line.strip(), n
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
        else:
            out.append((start, pending))
            pending = None
    return out


def simple_commands(text):
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    words, cmds = [], []
    for tok in lex:
        if tok in (";", "&&", "||", "|", "&"):
            if words:
                cmds.append(words)
            words = []
        else:
            words.append(tok)
    if words:
        cmds.append(words)
    # A redirection and its target are not arguments.
    cleaned = []
    for words in cmds:
        ws, skip = [], False
        for w in words:
            if skip:
                skip = False
                continue
            if w in (">", ">>", "<", "2>", "&>"):
                skip = True
                continue
            ws.append(w)
        cleaned.append(ws)
    return cleaned


def strip_wrappers(words):
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value before a command
        words = words[1:]
    if words and words[0] == "time":
        words = words[1:]
    if words and words[0] == "timeout":  # timeout [-s SIG] DURATION CMD ...
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[2:] if words[0] in ("-s", "-k") else words[1:]
        words = words[1:]
    return words


def repo_file(arg):
    """The path a command argument names when it is a file of the checkout or of the shared
    data (None otherwise: a user's own file, a KEY=VALUE, a number)."""
    if arg.startswith("../shared/"):
        return ROOT.parent / arg[len("../"):]
    if arg.startswith(REPO_DIRS):
        return ROOT / arg
    return None


def split_isim(words):
    """(verb path, rest) of `isim ...` words without the program name."""
    if not words:
        return (), []
    verb = (words[0],)
    if words[0] in SUBVERBS and len(words) > 1 and words[1] in SUBVERBS[words[0]]:
        verb = (words[0], words[1])
    return verb, words[len(verb):]


def value_flags(help_text):
    """The options that take a value, as boost's help prints them (`--out arg`, `-p [ --set ]
    arg`)."""
    flags = set()
    for m in re.finditer(r"^\s+(-\w)?\s*(?:\[ )?(--[\w-]+)?(?: \])?\s+arg\b", help_text, re.M):
        flags.update(f for f in m.groups() if f)
    return flags


def inputs_and_outputs(verb, args, takes_value):
    """(files read, indices of output arguments) of an isim command."""
    reads, outs, positional = [], set(), []
    i = 0
    while i < len(args):
        a = args[i]
        flag = a.split("=", 1)[0]
        if flag in OUT_FLAGS:
            if "=" not in a:
                outs.add(i + 1)
                i += 1
        elif flag in VALUE_FLAGS or (flag in takes_value and "=" not in a):
            if flag not in VALUE_FLAGS and repo_file(args[i + 1] if i + 1 < len(args) else ""):
                positional.append(i + 1)  # an input given by a flag: --profile P, --model M
            i += 1
        elif a.startswith("-"):
            pass
        else:
            positional.append(i)
        i += 1
    if verb in (("trace", "convert"), ("trace", "gen")) and positional:
        outs.add(positional[-1])
    if verb == ("sweep", "merge") and positional:
        outs.add(positional[0])
    for i, a in enumerate(args):
        if i in outs or a.startswith("-"):
            continue
        f = repo_file(a)
        if f is not None:
            reads.append((a, f))
    return reads, outs


class Checker:
    def __init__(self, isim, calibrate, readme_only):
        self.isim = isim
        self.calibrate = Path(calibrate) if calibrate else Path(isim).parent / "isim-calibrate"
        self.readme_only = readme_only
        self.failures, self.notes = [], []
        self.helps = {}
        self.tmp = tempfile.mkdtemp(prefix="check-readme-")
        self.runs = 0
        self.require_data = os.environ.get("ISIM_REQUIRE_DATA") == "1"

    def fail(self, where, msg):
        self.failures.append(f"{where}: {msg}")

    def help_of(self, argv):
        key = tuple(argv)
        if key not in self.helps:
            try:
                p = subprocess.run(argv + ["--help"], cwd=ROOT, capture_output=True, text=True,
                                   timeout=RUN_TIMEOUT_S)
                self.helps[key] = (p.returncode, p.stdout + p.stderr)
            except (OSError, subprocess.TimeoutExpired) as e:
                self.helps[key] = (-1, str(e))
        return self.helps[key]

    def check_files(self, where, reads):
        ok = True
        for arg, f in reads:
            if str(f).startswith(str(SHARED.parent)) and not SHARED.is_dir() and not self.require_data:
                self.notes.append(f"{where}: {arg}: not checked (no ../shared/data)")
                continue
            if not f.exists():
                self.fail(where, f"{arg}: no such file in the checkout")
                ok = False
        return ok

    def check_isim(self, where, words, readme):
        verb, args = split_isim(words[1:])
        if verb in (("--version",), ("--help",), ("-h",)):
            help_argv = [self.isim]
        elif verb == ("validate",) and "--against" in args:
            help_argv = [self.isim, "validate", "--against", "vllm"]
        elif verb == ("validate",) and "--kv-logs" in args:
            help_argv = [self.isim, "validate", "--kv-logs", "DIR"]
        else:
            help_argv = [self.isim, *verb]
        rc, text = self.help_of(help_argv)
        if rc != 0:
            self.fail(where, f"`{' '.join(['isim', *help_argv[1:], '--help'])}` exited {rc}")
            return
        for a in args:
            if a.startswith("--") and a not in ("--help", "--version"):
                flag = a.split("=", 1)[0]
                if not re.search(re.escape(flag[2:]) + r"\b", text):
                    self.fail(where, f"{flag}: not an option of `isim {' '.join(verb)}` "
                                     "(its --help does not name it)")
        reads, outs = inputs_and_outputs(verb, args, value_flags(text))
        files_ok = self.check_files(where, reads)
        if readme and verb in RUN_IN_README and files_ok:
            if any(str(f).startswith(str(SHARED.parent)) for _, f in reads) and not SHARED.is_dir():
                return
            self.run_isim(where, verb, args, outs)

    def run_isim(self, where, verb, args, outs):
        self.runs += 1
        out_dir = os.path.join(self.tmp, f"run{self.runs}")
        args = list(args)
        for i in sorted(outs):
            if i < len(args):
                name = os.path.basename(args[i].rstrip("/")) or "out"
                args[i] = os.path.join(out_dir, name)
        if verb == ("run",) and not any(a.split("=", 1)[0] in ("--out", "-o") for a in args):
            args += ["--out", out_dir]  # never write results/ into the checkout
        os.makedirs(out_dir, exist_ok=True)
        argv = [self.isim, *verb, *args]
        try:
            p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.fail(where, f"`{shlex.join(argv)}` ran past {RUN_TIMEOUT_S} s")
            return
        if p.returncode != 0:
            self.fail(where, f"`{shlex.join(argv)}` exited {p.returncode}: "
                             f"{(p.stderr or p.stdout).strip()[-400:]}")

    def check_command(self, page, line, text, readme):
        where = f"{page.rel}:{line}"
        try:
            cmds = simple_commands(text)
        except ValueError as e:
            self.fail(where, f"cannot parse `{text}`: {e}")
            return
        for words in cmds:
            words = strip_wrappers(words)
            if not words:
                continue
            prog = words[0]
            if prog == "isim" or re.match(r"^build/[\w.-]+/bin/isim$", prog):
                self.check_isim(where, words, readme)
            elif prog == "isim-calibrate":
                if not self.calibrate.exists():
                    self.fail(where, f"{self.calibrate}: not built (build isim-calibrate)")
                    continue
                rc, _ = self.help_of([str(self.calibrate)])
                if rc != 0:
                    self.fail(where, f"`isim-calibrate --help` exited {rc}")
                self.check_files(where, [(a, f) for a in words[1:]
                                         if not a.startswith("-") and (f := repo_file(a))
                                         and words[words.index(a) - 1] not in OUT_FLAGS])
            elif prog.startswith("scripts/"):
                f = ROOT / prog
                if not (f.is_file() and os.access(f, os.X_OK)):
                    self.fail(where, f"{prog}: no such executable script")
            elif prog in ("python3", "python"):
                script = next((w for w in words[1:] if not w.startswith("-")), None)
                if script is None or not (ROOT / script).is_file():
                    self.fail(where, f"{script}: no such script")
            elif readme:
                self.fail(where, f"`{prog}`: the README shows only commands this test can "
                                 "check (isim, isim-calibrate, scripts/, python3 FILE)")
            else:
                self.notes.append(f"{where}: `{prog}` not checked")

    def check_links(self, page):
        in_block = False
        for n, line in enumerate(page.lines, 1):
            if re.match(r"^\s*```", line):
                in_block = not in_block
                continue
            if in_block:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                f = (page.path.parent / path).resolve() if path else page.path
                if not f.exists():
                    self.fail(f"{page.rel}:{n}", f"link {target}: no such file")
                elif anchor and f.suffix == ".md" and anchor not in anchors(f):
                    self.fail(f"{page.rel}:{n}", f"link {target}: no such heading")


_anchor_cache = {}


def anchors(md):
    """GitHub's anchors of a page's headings."""
    if md not in _anchor_cache:
        found, seen, in_block = set(), {}, False
        for line in md.read_text(encoding="utf-8").split("\n"):
            if re.match(r"^\s*```", line):
                in_block = not in_block
            m = None if in_block else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
                k = seen.get(slug, 0)
                seen[slug] = k + 1
                found.add(slug if k == 0 else f"{slug}-{k}")
        _anchor_cache[md] = found
    return _anchor_cache[md]


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    isim = os.path.abspath(argv[0])
    readme_only = "--readme-only" in argv[1:]
    calibrate = None
    if "--calibrate" in argv[1:-1]:
        calibrate = os.path.abspath(argv[argv.index("--calibrate") + 1])
    if not os.access(isim, os.X_OK):
        print(f"check_readme: {isim}: not an executable isim", file=sys.stderr)
        return 2
    c = Checker(isim, calibrate, readme_only)
    pages = [Page(ROOT / "README.md")]
    if not readme_only:
        pages += [Page(p) for p in sorted((ROOT / "docs").glob("*.md"))]
    total = 0
    for page in pages:
        readme = page.rel == "README.md"
        cmds = commands(page)
        if readme and not cmds:
            c.fail(page.rel, "no commands found: the convention is `$ ` lines in fenced blocks")
        for line, text in cmds:
            c.check_command(page, line, text, readme)
        c.check_links(page)
        total += len(cmds)
    shutil.rmtree(c.tmp, ignore_errors=True)
    for n in c.notes:
        print(f"note: {n}")
    for f in c.failures:
        print(f"FAIL: {f}")
    print(f"check_readme: {total} command(s) in {len(pages)} page(s), {c.runs} run for real; "
          f"{len(c.failures)} failure(s)")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
