# GoogleTest binaries, each test case reported by lit.
import os
import lit.formats

config.name = "tbc-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.tbc_obj_root, "test", "unit")
config.test_exec_root = config.test_source_root
