"""Build the Cython extensions: the kernels ``dpxgb_dask/_core/<name>.pyx`` as
``dpxgb_dask._core.<name>``, and the exact noise samplers ``dpxgb_dask/privacy/_samplers.pyx``
as ``dpxgb_dask.privacy._samplers``. Each source sits in the package it is compiled into, so
its cimports are relative (``from .common cimport ...``).

Environment variables
---------------------
DPXGB_DEBUG_BOUNDS=1
    Compile with ``boundscheck`` and ``wraparound`` on, for debugging index errors.
DPXGB_NO_OPENMP=1
    Compile without OpenMP even when the compiler supports it.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import warnings
from glob import glob
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
CORE_DIR = os.path.join("dpxgb_dask", "_core")
PRIVACY_DIR = os.path.join("dpxgb_dask", "privacy")


def _compiler_supports_openmp():
    """Return True when the C compiler compiles and links a ``#pragma omp`` program."""
    if os.environ.get("DPXGB_NO_OPENMP"):
        return False
    cc = sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()[0]
    if shutil.which(cc) is None:
        return False
    src = textwrap.dedent(
        """
        #include <omp.h>
        int main(void) {
            int n = 0;
            #pragma omp parallel reduction(+:n)
            n += 1;
            return n > 0 ? 0 : 1;
        }
        """
    )
    with tempfile.TemporaryDirectory() as tmp:
        c_file = os.path.join(tmp, "check_openmp.c")
        with open(c_file, "w") as f:
            f.write(src)
        result = subprocess.run(
            [cc, "-fopenmp", c_file, "-o", os.path.join(tmp, "a.out")],
            capture_output=True,
        )
    return result.returncode == 0


def _extensions():
    use_openmp = _compiler_supports_openmp()
    if not use_openmp:
        warnings.warn(
            "dpxgb_dask: the C compiler does not support OpenMP (or DPXGB_NO_OPENMP is set); "
            "the kernels are built single-threaded and their n_threads argument is ignored.",
            stacklevel=1,
        )
    # -ffp-contract=off: no fused multiply-add where the source has a multiply and an add
    # (GCC fuses them by default wherever the target has FMA, as on every ARM64), so the
    # kernels round the same way on every CPU and a model file's bytes do not depend on it.
    compile_args = ["-O3", "-ffp-contract=off"]
    link_args = []
    if use_openmp:
        compile_args.append("-fopenmp")
        link_args.append("-fopenmp")
    extensions = []
    for pyx in sorted(glob(os.path.join(CORE_DIR, "*.pyx"))):
        name = Path(pyx).stem
        extensions.append(
            Extension(
                f"dpxgb_dask._core.{name}",
                [pyx],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=compile_args,
                extra_link_args=link_args,
            )
        )
    for pyx in sorted(glob(os.path.join(PRIVACY_DIR, "*.pyx"))):
        # the samplers draw the chunks of a release in parallel (one keystream lane each)
        extensions.append(
            Extension(
                f"dpxgb_dask.privacy.{Path(pyx).stem}",
                [pyx],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=compile_args,
                extra_link_args=link_args,
            )
        )
    debug_bounds = bool(os.environ.get("DPXGB_DEBUG_BOUNDS"))
    directives = {
        "language_level": 3,
        "boundscheck": debug_bounds,
        "wraparound": debug_bounds,
        "cdivision": True,
        "initializedcheck": debug_bounds,
        "nonecheck": False,
    }
    # One C directory per directive set: cythonize regenerates C only when a .pyx is newer
    # than its .c, so switching DPXGB_DEBUG_BOUNDS must not reuse the other mode's C files.
    mode = "debug-bounds" if debug_bounds else "release"
    return cythonize(
        extensions,
        compiler_directives=directives,
        build_dir=os.path.join("build", f"cython-{mode}"),
    )


setup(ext_modules=_extensions())
