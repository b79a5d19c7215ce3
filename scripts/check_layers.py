#!/usr/bin/env python3
"""The layer rule, checked: every #include under src/ stays inside the layer graph CMakeLists.txt
declares, and every declared link is used.

CMakeLists.txt declares each layer as `deepinfer_layer(NAME DEPS ...)`: src/NAME/ may include its
own headers, the headers of the deepinfer layers it lists (directly: a layer it reaches only
through another must be listed too) and the third-party headers of the libraries it lists. A
listed deepinfer layer or library that no file of the layer includes is an error as well (a link
nothing uses). src/main.cc belongs to the executable, which links tools.

usage: scripts/check_layers.py [REPO_ROOT]     exit 0: clean; 1: violations (listed)
       scripts/check_layers.py --self-test       the checker against a made-up tree with one
                                                 violation of each kind (exit 0: all caught)
"""
import os
import re
import sys
import tempfile

# Third-party include prefixes -> the CMake target that provides them.
LIBRARIES = {
    'nlohmann/': 'nlohmann_json::nlohmann_json',
    'boost/': 'Boost::headers',
    'CLI/': 'CLI11::CLI11',
    'xxhash.h': 'PkgConfig::XXHASH',
    'pcre2.h': 'PkgConfig::PCRE2',
    'unicode/': 'ICU::uc',
    'mpi.h': 'MPI::MPI_CXX',
    'ucp/': 'PkgConfig::UCX',
}
# Targets whose use cannot be seen in an #include (threads via <thread> and friends).
UNCHECKED_LINKS = {'Threads::Threads'}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
LAYER = re.compile(r'deepinfer_layer\(\s*(\w+)\s+DEPS\s+([^)]*)\)', re.S)


def declared_layers(root):
    with open(os.path.join(root, 'CMakeLists.txt'), encoding='utf-8') as f:
        text = re.sub(r'#[^\n]*', '', f.read())
    layers = {}
    for name, deps in LAYER.findall(text):
        layers[name] = deps.split()
    return layers


def layer_sources(root, name):
    base = os.path.join(root, 'src', name)
    for dirpath, _, files in os.walk(base):
        for fn in sorted(files):
            if fn.endswith(('.h', '.cc')):
                yield os.path.join(dirpath, fn)


def includes(path):
    with open(path, encoding='utf-8') as f:
        return INCLUDE.findall(f.read())


def check(root):
    layers = declared_layers(root)
    errors = []
    if not layers:
        return ['no deepinfer_layer(...) declarations found in CMakeLists.txt']
    for name, deps in layers.items():
        allowed_layers = {name} | {d[len('deepinfer_'):] for d in deps if d.startswith('deepinfer_')}
        allowed_libs = {d for d in deps if not d.startswith('deepinfer_')}
        used = set()
        for path in layer_sources(root, name):
            rel = os.path.relpath(path, root)
            for inc in includes(path):
                top = inc.split('/', 1)[0]
                if top in layers and '/' in inc:
                    if top not in allowed_layers:
                        errors.append(f'{rel}: includes "{inc}", but layer {name} does not declare '
                                      f'deepinfer_{top} (CMakeLists.txt)')
                    used.add('deepinfer_' + top)
                    continue
                for prefix, target in LIBRARIES.items():
                    if inc == prefix or (prefix.endswith('/') and inc.startswith(prefix)):
                        if target not in allowed_libs:
                            errors.append(f'{rel}: includes <{inc}>, but layer {name} does not '
                                          f'declare {target} (CMakeLists.txt)')
                        used.add(target)
        for dep in deps:
            if dep not in used and dep not in UNCHECKED_LINKS:
                errors.append(f'layer {name} declares {dep}, but none of its files includes it')
    main = os.path.join(root, 'src', 'main.cc')
    if os.path.exists(main):
        for inc in includes(main):
            top = inc.split('/', 1)[0]
            if top in layers and '/' in inc and top != 'tools':
                errors.append(f'src/main.cc: includes "{inc}"; the executable links tools only')
    return errors


def self_test():
    """A tiny tree: core <- model <- server; server includes core without declaring it, model
    declares a library it never includes, and main.cc reaches past tools."""
    tree = {
        'CMakeLists.txt': 'deepinfer_layer(core DEPS Threads::Threads)\n'
                          'deepinfer_layer(model DEPS deepinfer_core PkgConfig::XXHASH)\n'
                          'deepinfer_layer(server DEPS deepinfer_model)\n'
                          'deepinfer_layer(tools DEPS deepinfer_server)\n',
        'src/core/a.h': '#include <vector>\n',
        'src/model/m.cc': '#include "core/a.h"\n#include "model/m.h"\n',
        'src/model/m.h': '#pragma once\n',
        'src/server/s.cc': '#include "model/m.h"\n#include "core/a.h"\n',
        'src/tools/t.cc': '#include "server/s.h"\n',
        'src/main.cc': '#include "model/m.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), 'w', encoding='utf-8') as f:
                f.write(text)
        errors = check(root)
    expected = ['src/server/s.cc: includes "core/a.h"', 'layer model declares PkgConfig::XXHASH',
                'src/main.cc: includes "model/m.h"']
    missing = [e for e in expected if not any(x.startswith(e) for x in errors)]
    for e in errors:
        print('caught:', e)
    if missing or len(errors) != len(expected):
        print('self-test FAILED; expected', expected)
        return 1
    print('self-test: every planted violation caught, nothing else')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    errors = check(os.path.abspath(root))
    for e in errors:
        print(e)
    if errors:
        print(f'{len(errors)} layer violation(s); the graph is in CMakeLists.txt and '
              'docs/architecture.md')
        return 1
    print('layer graph: every include and every declared link checked')
    return 0


if __name__ == '__main__':
    sys.exit(main())
