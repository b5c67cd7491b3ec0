#!/usr/bin/python3
"""The C++ layout of the code base, enforced in CI (issue 34).

Formatting by hand drifts: one file wraps at 100 columns, the next at 110, and every review
spends words on it. This test fails when:

- a C++ file (.cpp, .h, .cu, .cuh) of compiler/, runtime/, tests/ or tools/ is not what
  clang-format 14 makes of it with the repository's .clang-format (Google style, 100 columns);
  `clang-format-14 -i FILE` fixes it;
- a line of C++ anywhere in the repository, generated/ included, is over 100 columns (clang-format
  cannot wrap a long string or comment; the emitter's output is not clang-formatted, but keeps
  to the width).

Left out: tools/verify/cases/, zoc-verify's test inputs, whose expected findings name line and
column numbers.

Usage: check_format.py CLANG_FORMAT REPO_ROOT. Prints every violation and exits 1 if there is
one.
"""
import os
import subprocess
import sys

MAX_COLUMNS = 100
CXX_SUFFIXES = ('.cpp', '.h', '.cuh', '.cu')
FORMATTED_ROOTS = ('compiler/', 'runtime/', 'tests/', 'tools/')
LEFT_OUT = ('tools/verify/cases/',)


def cxx_files(root):
    out = subprocess.check_output(['git', '-C', root, 'ls-files', '--cached', '--others',
                                   '--exclude-standard'], text=True)
    return [f for f in out.splitlines()
            if f.endswith(CXX_SUFFIXES) and os.path.isfile(os.path.join(root, f))
            and not f.startswith(LEFT_OUT)]


def long_lines(root, path):
    problems = []
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        for k, line in enumerate(f, 1):
            width = len(line.rstrip('\n'))
            if width > MAX_COLUMNS:
                problems.append(f'{path}:{k}: {width} columns (limit {MAX_COLUMNS})')
    return problems


def unformatted(clang_format, root, paths):
    """The files clang-format would change, as its own `file:line:col: ...` warnings."""
    problems = []
    for start in range(0, len(paths), 50):
        batch = [os.path.join(root, p) for p in paths[start:start + 50]]
        run = subprocess.run([clang_format, '--dry-run', '--style=file'] + batch,
                             cwd=root, capture_output=True, text=True)
        if run.returncode != 0:
            problems.append(f'{clang_format} failed: {run.stderr.strip()}')
            continue
        seen = set()
        for line in run.stderr.splitlines():
            if 'warning:' in line and '[-Wclang-format-violations]' in line:
                path = os.path.relpath(line.split(':', 1)[0], root)
                if path not in seen:
                    seen.add(path)
                    where = line.split(': warning:')[0].split(':', 1)[1]
                    problems.append(f'{path}:{where}: not clang-formatted '
                                    f'(clang-format-14 -i {path})')
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: check_format.py CLANG_FORMAT REPO_ROOT')
    clang_format, root = sys.argv[1], sys.argv[2]
    files = cxx_files(root)
    problems = []
    for f in files:
        problems += long_lines(root, f)
    problems += unformatted(clang_format, root,
                            [f for f in files if f.startswith(FORMATTED_ROOTS)])
    for p in problems:
        print(p)
    print(f'format: {len(problems)} violation(s) in {len(files)} C++ files')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
