# lit configuration for graphjit's IR-level tests. Run through ctest, or by hand:
#   python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv --param graphjit=build/bin/graphjit tests/lit
import os

import lit.formats

config.name = "graphjit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".pbtxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(lit_config.params.get("exec_root", "/tmp"), "graphjit-lit")

graphjit = lit_config.params.get("graphjit")
if not graphjit:
    lit_config.fatal("pass --param graphjit=PATH/TO/graphjit")
config.substitutions.append(("%graphjit", graphjit))
config.environment["PATH"] = os.pathsep.join(["/usr/lib/llvm-19/bin", config.environment.get("PATH", os.environ["PATH"])])
config.environment.pop("GRAPHJIT_FLAGS", None)
