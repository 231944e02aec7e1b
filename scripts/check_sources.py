#!/usr/bin/env python3
"""Rules the JIT's sources keep, checked in CI (ctest's source_rules):

- no function of jit/ (its subfolders included) is longer than --max-lines (120) lines,
  from its signature's opening brace to its closing one; a function whose body is one table
  (a `static const` initializer, returned) is a table, not code, and is not counted;
- op-specific code is found through tables keyed by op, not comparisons: jit/'s sources
  hold at most --max-op-comparisons (20) comparisons of an op name with a literal
  (`op == "X"`, `op() != "X"`);
- unit tests mirror the sources' folders: each tests/unit/**/NAME_test.cc lies in
  tests/unit/D/ for a folder D of sources (tests/unit/jit/gpu_launch_test.cc tests
  jit/gpu_launch); the whole system's tests are in tests/system/;
- with --clang-format BINARY: every C++ file git tracks (under --format's folders: all by
  default) is formatted as .clang-format says (`BINARY -i FILE` formats one; a span the
  formatter cannot keep stable, such as an X-macro's list, is between `// clang-format off`
  and `// clang-format on`).

Prints each violation and exits 1 if there is one.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

OP_COMPARISON = re.compile(r'\bop(\(\))? (==|!=) "')
CONTROL = re.compile(r'\b(if|for|while|switch|catch|return)\s*\(.*\)\s*$|\b(else|do|try)\s*$|=\s*$|\[[^\]]*\]\s*\(.*\)\s*(mutable\s*)?(->\s*[\w:<>, ]+)?\s*$')


def strip(source):
    """The source with comments and string/char literals blanked, lines kept."""
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith('//', i):
            j = source.find('\n', i)
            i = n if j < 0 else j
        elif source.startswith('/*', i):
            j = source.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * source.count('\n', i, j))
            i = j
        elif source.startswith('R"', i) and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == '_')):
            m = re.match(r'R"([^(]*)\(', source[i:])
            end = source.find(')' + m.group(1) + '"', i) if m else -1
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + '\n' * source.count('\n', i, end))
            i = end
        elif c in '"\'':
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def is_one_table(body):
    """Whether a function's body is a `static const` table and its return."""
    if not body.startswith('static const'):
        return False
    depth = 0
    for i, c in enumerate(body):
        depth += (c in '{([') - (c in '})]')
        if c == ';' and depth == 0:
            return re.fullmatch(r'return\s+\w+\s*;', body[i + 1:].strip()) is not None
    return False


def functions(path):
    """(name, first line, lines, is_table) of each function body not nested in another."""
    text = strip(open(path, encoding='utf-8').read())
    result, stack = [], []  # stack: (is_function, line, name, start offset)
    line = 1
    for i, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c == '{':
            before = text[max(0, i - 2000):i]
            head = before[max(before.rfind(';'), before.rfind('{'), before.rfind('}')) + 1:]
            is_function = (')' in head and not CONTROL.search(head.strip())
                           and not any(f for f, *_ in stack)
                           and re.search(r'\)\s*(const|override|noexcept|final|\s)*(->\s*[\w:<>,\s*&]+)?\s*(:\s*[^{}]*)?$', head)
                           is not None)
            names = re.findall(r'([~\w:]+)\s*\(', head)
            stack.append((is_function, line, names[0] if names else '?', i))
        elif c == '}' and stack:
            is_function, first, name, start = stack.pop()
            if is_function:
                is_table = is_one_table(text[start + 1:i].strip())
                result.append((name, first, line - first + 1, is_table))
    return result


def check_format(root, clang_format, folders):
    """The C++ files git tracks in `folders` that clang-format would change: their count (each named)."""
    patterns = [f'{folder}/*.{ext}' if folder != '.' else f'*.{ext}' for folder in folders for ext in ('cc', 'h')]
    files = subprocess.run(['git', '-C', root, 'ls-files'] + patterns, check=True, capture_output=True,
                           text=True).stdout.split()
    unformatted = []
    for i in range(0, len(files), 50):
        batch = [os.path.join(root, f) for f in files[i:i + 50]]
        result = subprocess.run([clang_format, '--dry-run', '--Werror', '--style=file'] + batch, capture_output=True, text=True)
        if result.returncode:
            unformatted += sorted({line.split(':')[0] for line in result.stderr.splitlines() if ': error:' in line})
    for path in unformatted:
        print(f'{os.path.relpath(path, root)}: not formatted as .clang-format says ({clang_format} -i formats it)')
    return len(unformatted)


def check_test_layout(root):
    """The unit tests outside a folder mirroring a folder of sources: their count (each named)."""
    misplaced = 0
    for path in sorted(glob.glob(os.path.join(root, 'tests', 'unit', '**', '*_test.cc'), recursive=True)):
        folder = os.path.relpath(os.path.dirname(path), os.path.join(root, 'tests', 'unit'))
        sources = glob.glob(os.path.join(root, folder, '*.cc')) + glob.glob(os.path.join(root, folder, '*.h'))
        if folder == '.' or not sources:
            print(f'{os.path.relpath(path, root)}: a unit test lies in tests/unit/D/, D the folder of the sources it tests')
            misplaced += 1
    return misplaced


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    parser.add_argument('--max-lines', type=int, default=120)
    parser.add_argument('--max-op-comparisons', type=int, default=20)
    parser.add_argument('--clang-format', help='check the formatting with this clang-format')
    parser.add_argument('--format', nargs='*', default=['.'], help='the folders whose formatting is checked (default: all)')
    args = parser.parse_args()
    sources = sorted(glob.glob(os.path.join(args.root, 'jit', '**', '*.cc'), recursive=True) +
                     glob.glob(os.path.join(args.root, 'jit', '**', '*.h'), recursive=True))
    if not sources:
        print(f'check_sources: no sources under {args.root}/jit')
        return 1
    failures = 0
    for path in sources:
        for name, first, lines, is_table in functions(path):
            if lines > args.max_lines and not is_table:
                print(f'{os.path.relpath(path, args.root)}:{first}: {name} is {lines} lines (at most {args.max_lines})')
                failures += 1
    comparisons = []
    for path in sources:
        for number, text in enumerate(open(path, encoding='utf-8'), 1):
            comparisons += [f'{os.path.relpath(path, args.root)}:{number}'] * len(OP_COMPARISON.findall(text))
    if len(comparisons) > args.max_op_comparisons:
        print(f'jit/ compares op names with literals {len(comparisons)} times (at most {args.max_op_comparisons}; '
              'find op-specific code through a table keyed by op): ' + ', '.join(comparisons))
        failures += 1
    failures += check_test_layout(args.root)
    if args.clang_format:
        failures += check_format(args.root, args.clang_format, args.format)
    print(f'check_sources: {len(sources)} files of jit/, {len(comparisons)} op comparisons, '
          f'{failures} violation{"" if failures == 1 else "s"}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
