"""The map of sts.py: its parts, their sections and their sizes, read from the banners.

    python3 tests/sts_map.py [--all] [PATH]     (`make map`)
    python3 tests/sts_map.py --update [PATH]    rewrite the sizes the Part banners state

A part banner is a line of `=` under `# `, then `# Part N: Title`; a section
banner is a line of 79 `#`, then `# Title`; with --all, the `# ---- title ----`
sub-banners inside each section are listed too.  Sizes are lines, from a
banner to the next banner of the same or a higher level.  Standard library
only and independent of sts.py itself, so it works on a broken file too;
tests/test_style.py reads the same map, and checks that the size each Part
banner states for a section (`#   Title   ~1,200`, rounded by stated_size)
is near the real one; after a section grew, shrank or was added, --update
rewrites those lines.
"""
import os
import re
import sys

PART_RULE = "# " + "=" * 77
SECTION_RULE = "#" * 79
_PART_TITLE = re.compile(r"# Part (\d+): (.+)$")
_SUB = re.compile(r"^( *)# ---- (.+?) -+$")
# A line of a Part banner's contents: a section's title (or "(the whole
# Part)") and its size.
CONTENTS = re.compile(r"^#   (\S.*?) +~([0-9,]+)$")
WHOLE = "(the whole Part)"


def stated_size(lines):
    """How a banner states a size: to ten lines under a thousand, else to a hundred."""
    step = 10 if lines < 1000 else 100
    return "{:,}".format(int(round(lines / step)) * step)


class Block:
    """One part, section or sub-banner: where it starts and how long it is."""

    def __init__(self, level, title, first):
        self.level, self.title, self.first = level, title, first   # first: 1-based line
        self.last = first
        self.children = []

    @property
    def lines(self):
        return self.last - self.first + 1


def read_map(lines):
    """(top lines, [part Block]) of a list of source lines (no newlines)."""
    parts = []
    blocks = []     # every block in file order, to close each at the next one
    for n, line in enumerate(lines[:-1]):
        following = lines[n + 1]
        if line == PART_RULE and _PART_TITLE.match(following):
            block = Block(0, following[2:].strip(), n + 1)
            parts.append(block)
        elif line == SECTION_RULE and following.startswith("# ") and following[2:3].isupper():
            block = Block(1, following[2:].strip(), n + 1)
            if parts:
                parts[-1].children.append(block)
        else:
            match = _SUB.match(line)
            if not match or not parts or not parts[-1].children:
                continue
            # An indented one divides a class, inside the sub-banner above it.
            section = parts[-1].children[-1]
            inner = bool(match.group(1)) and bool(section.children)
            block = Block(3 if inner else 2, match.group(2), n + 1)
            (section.children[-1] if inner else section).children.append(block)
        blocks.append(block)
    # Each block runs until the next block of its level or a higher one.
    for index, block in enumerate(blocks):
        later = [b.first for b in blocks[index + 1:] if b.level <= block.level]
        block.last = (later[0] - 1) if later else len(lines)
    top = parts[0].first - 1 if parts else len(lines)
    return top, parts


def source_lines(path=None):
    path = path or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "sts.py")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def render(lines, show_all=False):
    top, parts = read_map(lines)
    out = ["%-64s %7s  %s" % ("sts.py", "{:,}".format(len(lines)), "line"),
           "%-64s %7s  %d" % ("  (before Part 1: docstring, imports)", "{:,}".format(top), 1)]
    for part in parts:
        out.append("%-64s %7s  %d" % (part.title, "{:,}".format(part.lines), part.first))
        for section in part.children:
            out.append("%-64s %7s  %d" % ("    " + section.title[:60], "{:,}".format(section.lines),
                                          section.first))
            for sub in section.children if show_all else ():
                out.append("%-64s %7s  %d" % ("        " + sub.title[:56],
                                              "{:,}".format(sub.lines), sub.first))
                for inner in sub.children:
                    out.append("%-64s %7s  %d" % ("            " + inner.title[:52],
                                                  "{:,}".format(inner.lines), inner.first))
    return "\n".join(out)


def stated(lines):
    """{(Part title, section title or WHOLE): (line index, stated lines)}."""
    _, parts = read_map(lines)
    found = {}
    for part in parts:
        end = part.children[0].first - 1 if part.children else part.last
        for n in range(part.first, end):
            match = CONTENTS.match(lines[n])
            if match:
                found[(part.title, match.group(1))] = (n, int(match.group(2).replace(",", "")))
    return found


def real(lines):
    """{(Part title, section title or WHOLE): lines} as read_map counts them."""
    _, parts = read_map(lines)
    sizes = {}
    for part in parts:
        sizes[(part.title, WHOLE)] = part.lines
        for section in part.children:
            sizes[(part.title, section.title)] = section.lines
    return sizes


def update(path):
    """Rewrite each Part banner's contents: its sections as they are now, and
    their sizes.  (A section added to a Part gets its line here too.)"""
    lines = source_lines(path)
    for _ in range(2):   # the second pass sizes what the first one listed
        _, parts = read_map(lines)
        sizes = real(lines)
        at = stated(lines)
        for part in reversed(parts):
            rows = sorted(n for key, (n, _) in at.items() if key[0] == part.title)
            if not rows:
                continue
            names = [section.title for section in part.children] + [WHOLE]
            lines[rows[0]:rows[-1] + 1] = [
                "#   %-58s ~%s" % (name, stated_size(sizes[(part.title, name)]))
                for name in names]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv):
    show_all = "--all" in argv
    paths = [a for a in argv if not a.startswith("--")] or [None]
    if "--update" in argv:
        update(paths[0] or os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "sts.py"))
        return 0
    try:
        print(render(source_lines(paths[0]), show_all))
    except BrokenPipeError:   # `make map | head`
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
