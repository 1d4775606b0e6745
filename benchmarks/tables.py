"""The Markdown report of a benchmark script: lines printed as they come, then written to
``--out`` with the command that made them."""
import sys
import time
from pathlib import Path


class Report:
    """Lines of a Markdown report.

    Parameters
    ----------
    script : str
        The script's file name under ``benchmarks/`` (for the closing command line).
    """

    def __init__(self, script):
        self.script = script
        self.lines = []
        self.t_start = time.time()

    def say(self, *lines):
        """Print and keep each line (no argument: an empty line)."""
        for line in lines or ("",):
            self.lines.append(line)
            print(line, flush=True)

    def finish(self, out=None):
        """Close with the run time and the command, and write the lines to ``out``."""
        self.say(f"({time.time() - self.t_start:.0f} s; command: python benchmarks/"
                 f"{self.script} " + " ".join(sys.argv[1:]) + ")")
        if out:
            Path(out).write_text("\n".join(self.lines) + "\n")


def epsilon_table(labels, epsilons, scores, digits=3):
    """A Markdown table of one score per configuration and ε: mean ± std over repetitions.

    Parameters
    ----------
    labels : sequence of str
        The configurations (rows).
    epsilons : sequence of float
        The columns.
    scores : ndarray of float, shape (len(labels), len(epsilons), n_repetitions)
    digits : int

    Returns
    -------
    list of str
    """
    lines = ["| configuration | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |",
             "|---|" + "---|" * len(epsilons)]
    for label, row in zip(labels, scores):
        cells = [f"{cell.mean():.{digits}f} ± {cell.std():.{digits}f}" for cell in row]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines
