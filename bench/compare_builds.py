#!/usr/bin/env python3
"""Two builds of graphjit timed on the same graphs, interleaved: for a change that must not
change speed (a refactoring of the compiler), the JIT's median time per graph in each build
and their ratio.

    bench/compare_builds.py --before OLD/bin/graphjit --after NEW/bin/graphjit [--device gpu-emu]
        [--rounds 5] [--iters 50] [graph.pb ...]      (default: bench/graphs/*.pb)

Each round runs every graph with `graphjit bench --jit on` once per build, the builds'
order alternating from round to round, so both share the machine's noise; a graph's time in
a build is the median of its rounds' medians. On a GPU device the performance model's
prediction for the graph's kernels (runtime/gpu_model.h; deterministic) is compared too
(gpu-emu: the prediction alone is meaningful). Prints a Markdown table and the geometric
mean of the ratios; --json FILE writes the numbers.
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile


def bench(graphjit, graph, device, iters, json_path):
    command = [graphjit, 'bench', graph, '--jit', 'on', '--iters', str(iters), '--json', json_path]
    if device:
        command += ['--device', device]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(json_path) as f:
        config = json.load(f)['configs'][0]
    return config['median_ms'], (config.get('gpu') or {}).get('predicted_us')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--before', required=True, help='the baseline build\'s graphjit')
    parser.add_argument('--after', required=True, help='the changed build\'s graphjit')
    parser.add_argument('--device', default='', help='cpu (default), gpu, gpu-emu')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--iters', type=int, default=50)
    parser.add_argument('--json', help='also write the results to FILE')
    parser.add_argument('graphs', nargs='*')
    args = parser.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    graphs = args.graphs or sorted(glob.glob(os.path.join(root, 'bench', 'graphs', '*.pb')))
    builds = {'before': args.before, 'after': args.after}
    times = {g: {b: [] for b in builds} for g in graphs}
    predicted = {g: {} for g in graphs}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'bench.json')
        for r in range(args.rounds):
            order = ['before', 'after'] if r % 2 == 0 else ['after', 'before']
            for g in graphs:
                for b in order:
                    median, prediction = bench(builds[b], g, args.device, args.iters, out)
                    times[g][b].append(median)
                    predicted[g][b] = prediction
            print(f'round {r + 1} of {args.rounds} done', file=sys.stderr)
    gpu = any(p.get('before') is not None for p in predicted.values())
    print('| graph | before ms | after ms | after / before |' + (' predicted us before | after |' if gpu else ''))
    print('| --- | ---: | ---: | ---: |' + (' ---: | ---: |' if gpu else ''))
    ratios, results = [], {}
    for g in graphs:
        before, after = statistics.median(times[g]['before']), statistics.median(times[g]['after'])
        ratios.append(after / before)
        results[os.path.basename(g)] = {'before_ms': before, 'after_ms': after, 'ratio': after / before,
                                        'predicted_us': predicted[g]}
        row = f'| {os.path.basename(g)} | {before:.3f} | {after:.3f} | {after / before:.3f} |'
        if gpu:
            row += f' {predicted[g]["before"]:.2f} | {predicted[g]["after"]:.2f} |'
        print(row)
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f'\ngeometric mean of after / before: {geomean:.3f} ({len(graphs)} graphs, {args.rounds} rounds interleaved, '
          f'{args.iters} runs each, device {args.device or "cpu"})')
    if gpu:
        changed = [os.path.basename(g) for g in graphs if predicted[g]['before'] != predicted[g]['after']]
        print('predictions: ' + ('the same for every graph' if not changed else 'changed for ' + ', '.join(changed)))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'graphs': results, 'geomean': geomean, 'rounds': args.rounds, 'iters': args.iters,
                       'device': args.device or 'cpu'}, f, indent=2)


if __name__ == '__main__':
    main()
