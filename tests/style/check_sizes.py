#!/usr/bin/python3
"""The size budget of the code base, enforced in CI (tinygrad's idea of a line budget).

Readable code is small code, and size rots silently: a function grows a case at a time, a
generated file a layer at a time. This test fails when any of these limits is crossed:

- no function (or lambda) in compiler/ or runtime/ over 150 lines (extents from Clang's
  parser, libclang through Debian's python3-clang-14);
- no source file outside tests/, generated/ and results/ over 600 lines;
- generated/resnet50/resnet50.cpp at most 550 lines (columns: tests/style/check_format.py);
- no folder of runtime/ holding more than 15 files directly.

Usage: check_sizes.py REPO_ROOT. Prints every violation and exits 1 if there is one.
"""
import os
import subprocess
import sys

MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 600
MAX_RESNET50_CPP_LINES = 550
MAX_FILES_PER_RUNTIME_FOLDER = 15

SOURCE_SUFFIXES = ('.cpp', '.h', '.cuh', '.cu', '.py', '.sh', '.cmake')
CXX_SUFFIXES = ('.cpp', '.h', '.cuh', '.cu')


def tracked_files(root):
    out = subprocess.check_output(['git', '-C', root, 'ls-files', '--cached', '--others',
                                   '--exclude-standard'], text=True)
    return [f for f in out.splitlines() if f and os.path.isfile(os.path.join(root, f))]


def count_lines(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return sum(1 for _ in f)


def long_functions(root, files):
    """(lines, 'file:line', name) of every function definition over the limit."""
    import clang.cindex as ci  # Debian's python3-clang-14
    ci.Config.set_library_file('/usr/lib/llvm-14/lib/libclang-14.so.1')
    kinds = {ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
             ci.CursorKind.FUNCTION_TEMPLATE, ci.CursorKind.CONSTRUCTOR,
             ci.CursorKind.DESTRUCTOR, ci.CursorKind.LAMBDA_EXPR}
    index = ci.Index.create()
    found = []

    def walk(cursor, path):
        for child in cursor.get_children():
            if child.location.file and child.location.file.name != path:
                continue
            if child.kind in kinds and (child.kind == ci.CursorKind.LAMBDA_EXPR or
                                        child.is_definition()):
                n = child.extent.end.line - child.extent.start.line + 1
                if n > MAX_FUNCTION_LINES:
                    rel = os.path.relpath(path, root)
                    found.append((n, f'{rel}:{child.extent.start.line}', child.spelling))
            walk(child, path)

    for rel in files:
        path = os.path.join(root, rel)
        lang = (['-x', 'cuda', '--cuda-host-only', '-nocudainc', '-nocudalib']
                if rel.endswith(('.cu', '.cuh')) else ['-x', 'c++'])
        # Headers outside the tree are not needed for extents: without them parsing is fast.
        args = lang + ['-std=c++20', '-nostdinc', '-nostdinc++',
                       '-I' + root, '-I' + os.path.join(root, 'runtime')]
        tu = index.parse(path, args=args)
        walk(tu.cursor, path)
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    files = tracked_files(root)
    problems = []

    code = [f for f in files if f.startswith(('compiler/', 'runtime/')) and f.endswith(CXX_SUFFIXES)]
    for n, where, name in sorted(long_functions(root, code), reverse=True):
        problems.append(f'{where}: function {name} is {n} lines (limit {MAX_FUNCTION_LINES})')

    for f in files:
        if f.startswith(('tests/', 'generated/', 'results/')) or not f.endswith(SOURCE_SUFFIXES):
            continue
        n = count_lines(os.path.join(root, f))
        if n > MAX_FILE_LINES:
            problems.append(f'{f}: {n} lines (limit {MAX_FILE_LINES} outside tests/ and generated/)')

    resnet = 'generated/resnet50/resnet50.cpp'
    if resnet in files:
        n = count_lines(os.path.join(root, resnet))
        if n > MAX_RESNET50_CPP_LINES:
            problems.append(f'{resnet}: {n} lines (limit {MAX_RESNET50_CPP_LINES})')

    per_folder = {}
    for f in files:
        if f.startswith('runtime/'):
            per_folder[os.path.dirname(f)] = per_folder.get(os.path.dirname(f), 0) + 1
    for folder, n in sorted(per_folder.items()):
        if n > MAX_FILES_PER_RUNTIME_FOLDER:
            problems.append(f'{folder}/: {n} files (limit {MAX_FILES_PER_RUNTIME_FOLDER} per folder)')

    for p in problems:
        print(p)
    print(f'size budget: {len(problems)} violation(s) in {len(files)} files')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
