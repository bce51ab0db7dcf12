"""pip install . — builds ember's Python package with CMake and installs it.

    python3 -m venv --system-site-packages .venv      # sees Debian's numpy (and torch)
    .venv/bin/pip install --no-build-isolation .       # offline: setuptools comes from Debian

The C++ library and the extension are built by CMake in build-pip/ (Release, without
tests, examples and benchmarks); EMBER_BUILD_DIR=build reuses an existing build instead.
libember.so is installed next to the extension, which finds it through RUNPATH=$ORIGIN.
"""

import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("EMBER_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
        else:
            build_dir = os.path.join(ROOT, "build-pip")
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DEMBER_BUILD_TESTS=OFF", "-DEMBER_BUILD_EXAMPLES=OFF", "-DEMBER_BUILD_BENCH=OFF",
                                   "-DEMBER_BUILD_PARITY=OFF"])
        subprocess.check_call(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2), "--target",
                               "ember_python"])
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        built = glob.glob(os.path.join(build_dir, "python", "ember", "_C*.so"))
        if not built:
            raise RuntimeError(f"the CMake build in {build_dir} produced no ember/_C*.so")
        shutil.copyfile(built[0], target)
        stub = os.path.join(build_dir, "python", "ember", "_C.pyi")
        if os.path.exists(stub):
            shutil.copyfile(stub, os.path.join(os.path.dirname(target), "_C.pyi"))
        for lib in glob.glob(os.path.join(build_dir, "libember.so*")):
            dest = os.path.join(os.path.dirname(target), os.path.basename(lib))
            if os.path.islink(lib):
                if os.path.lexists(dest):
                    os.unlink(dest)
                os.symlink(os.readlink(lib), dest)
            else:
                shutil.copyfile(lib, dest)
        # The extension's RUNPATH starts with $ORIGIN (CMakeLists.txt), so it finds the
        # libember.so.0 copied next to it before the build tree's.


setup(
    name="ember",
    version="0.1.0",
    description="ember: a small, fast deep learning framework with PyTorch's API",
    package_dir={"": "python"},
    packages=["ember", "ember.autograd", "ember.distributed", "ember.distributed.algorithms",
              "ember.distributed.algorithms.ddp_comm_hooks", "ember.distributed.checkpoint", "ember.distributed.fsdp",
              "ember.distributed.optim", "ember.nn", "ember.nn.parallel", "ember.optim", "ember.utils",
              "ember.utils.data"],
    package_data={"ember": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("ember._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
