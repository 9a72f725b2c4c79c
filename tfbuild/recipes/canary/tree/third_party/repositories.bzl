"""STAND-IN (tfbuild's canary): the external repositories TensorFlow's rc lines name, made locally.

bazel 4.2.3's --repo_env reaches repository rules only (not actions), as in TensorFlow's build,
whose repository rules turn WHEEL_NAME, TF_SYSROOT, ... into generated files. The canary does
the same, offline:

- @canary_wheel_config: WHEEL_NAME for the wheel rule, as TensorFlow's python repository rule
  writes it for tf_wheel. tfbuild's plan for the canary says tfbuild_canary: the stand-in's wheel
  has a name of its own, so installing it never replaces a TensorFlow (tensorflow_cpu).
- @local_config_cuda: TensorFlow's crosstool repository (third_party/gpus/cuda_configure.bzl reads
  TF_SYSROOT and its crosstool compiles and links with --sysroot). Here
  @local_config_cuda//crosstool:toolchain is a canary_crosstool carrying TF_SYSROOT, which
  //third_party:canary.bzl's rules read through the cpp fragment's --crosstool_top.
- @rules_ml_toolchain: only the build setting //common:enable_hermetic_cc that tfbuild's rc lines
  set for TensorFlow 2.21 (rules_ml_toolchain at TF 2.21's pin, common/BUILD); the canary never
  uses a hermetic toolchain, and says so when asked for one.
"""

def _wheel_config_impl(repository_ctx):
    name = repository_ctx.os.environ.get("WHEEL_NAME", "tfbuild_canary")
    repository_ctx.file("BUILD", "exports_files([\"wheel.bzl\"])\n")
    repository_ctx.file("wheel.bzl", "WHEEL_NAME = %r\n" % name)

_wheel_config = repository_rule(
    implementation = _wheel_config_impl,
    environ = ["WHEEL_NAME"],
    local = True,
)

def _cuda_configure_impl(repository_ctx):
    sysroot = repository_ctx.os.environ.get("TF_SYSROOT", "")
    repository_ctx.file("BUILD", "")
    repository_ctx.file("crosstool/BUILD", "\n".join([
        "load(\"@//third_party:canary.bzl\", \"canary_crosstool\")",
        "",
        "# TF_SYSROOT as the canary's crosstool passes it: --sysroot on every compile and link.",
        "canary_crosstool(",
        "    name = \"toolchain\",",
        "    sysroot = %r," % sysroot,
        "    visibility = [\"//visibility:public\"],",
        ")",
        "",
    ]))

_cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["TF_SYSROOT"],
    local = True,
)

def _ml_toolchain_impl(repository_ctx):
    repository_ctx.file("BUILD", "")
    repository_ctx.file("common/BUILD", "\n".join([
        "load(\"@//third_party:canary.bzl\", \"canary_bool_flag\")",
        "",
        "canary_bool_flag(",
        "    name = \"enable_hermetic_cc\",",
        "    build_setting_default = False,",
        "    visibility = [\"//visibility:public\"],",
        ")",
        "",
    ]))

_ml_toolchain = repository_rule(implementation = _ml_toolchain_impl, local = True)

def canary_repositories():
    _wheel_config(name = "canary_wheel_config")
    _cuda_configure(name = "local_config_cuda")
    _ml_toolchain(name = "rules_ml_toolchain")
