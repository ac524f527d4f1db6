"""pip install ./python: builds atoll_torch._C against an Atoll build.

ATOLL_BUILD_DIR names that build (default: ../build beside this folder); its libatoll.so is the
library the module loads at run time (ATOLL_LIBRARY overrides that path then)."""
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
build_dir = os.path.abspath(os.environ.get("ATOLL_BUILD_DIR", os.path.join(here, "..", "build")))
library = os.path.join(build_dir, "libatoll.so")
if not os.path.exists(library):
    raise SystemExit(f"atoll_torch: {library} not found; build Atoll first or set ATOLL_BUILD_DIR")

setup(
    name="atoll_torch",
    version="0.1.0",
    description="Atoll collectives as a torch.distributed backend for CPU tensors",
    packages=["atoll_torch"],
    ext_modules=[
        CppExtension(
            "atoll_torch._C",
            ["csrc/atoll_lib.cpp", "csrc/process_group_atoll.cpp", "csrc/shared_allocator.cpp", "csrc/module.cpp"],
            include_dirs=[os.path.join(here, "..", "include")],
            define_macros=[("ATOLL_LIBRARY_PATH", f'"{os.path.realpath(library)}"')],
            extra_compile_args=["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
