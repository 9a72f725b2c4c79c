"""STAND-IN (tfbuild's canary, not TensorFlow's rules): the canary's Starlark rules for bazel 4.2.3.

Debian's bazel 4.2.3 cannot build cc_binary offline (it wants @rules_cc, and Debian's rules_cc is
newer than that bazel), so the canary compiles with rules of its own that take what TensorFlow's
C++ compiles take, by the same paths:

- the copts: the cpp fragment's ``copts`` (``--copt``, including ``build:opt --copt=...`` of the
  imported .tf_configure.bazelrc under ``--config=opt``), then ``conlyopts``/``cxxopts``;
- the compiler: ``--repo_env=CC`` reaches repository rules only, so the rule reads the rc file's
  ``--action_env`` lines, as TensorFlow's local crosstool does (cc_configure/cuda_configure read
  CC and CLANG_COMPILER_PATH): ``CC`` for gcc, else ``CLANG_COMPILER_PATH`` for clang; the C++
  driver is the one beside it (gcc-12 -> g++-12, clang-16 -> clang++-16);
- the sysroot: the target named by ``--crosstool_top`` (the cpp fragment's ``cc_toolchain``
  configuration field): TensorFlow's ``@local_config_cuda//crosstool:toolchain`` carries
  TF_SYSROOT (third_party/repositories.bzl), the canary's default //third_party:crosstool none.

Deliberate non-determinism, as the stand-in had (see tensorflow/tools/pip_package/pack_wheel.py
for the wheel's): each compile names its source by absolute path, ``$PWD/src/kernel.c`` inside
the output base's execution root (tfbuild's .bazelrc route runs actions there, standalone), so
``__FILE__`` carries the output base unless ``-ffile-prefix-map=OUTPUT_BASE=.`` maps it away; and
``__DATE__``/``__TIME__`` come from the clock unless SOURCE_DATE_EPOCH reaches the action
(``--action_env=SOURCE_DATE_EPOCH``, which tfbuild's reproducible plans pass).
"""

load("@canary_wheel_config//:wheel.bzl", "WHEEL_NAME")

CanaryCrosstoolInfo = provider(fields = ["sysroot"])
CanaryLibraryInfo = provider(fields = ["library", "flags"])

def _crosstool_impl(ctx):
    return [CanaryCrosstoolInfo(sysroot = ctx.attr.sysroot)]

canary_crosstool = rule(
    implementation = _crosstool_impl,
    attrs = {"sysroot": attr.string()},
)

BoolFlagInfo = provider(fields = ["value"])

def _bool_flag_impl(ctx):
    return [BoolFlagInfo(value = ctx.build_setting_value)]

canary_bool_flag = rule(
    implementation = _bool_flag_impl,
    build_setting = config.bool(flag = True),
)

#: Prefix maps name the output base: they stay off BUILD_FLAGS, which records the planned flags.
_PREFIX_MAPS = ("-ffile-prefix-map=", "-fdebug-prefix-map=", "-fmacro-prefix-map=")

def _compilers(ctx):
    env = ctx.configuration.default_shell_env
    cc = env.get("CC") or env.get("CLANG_COMPILER_PATH")
    if not cc:
        fail("no compiler: the rc file sets neither --action_env CC nor CLANG_COMPILER_PATH " +
             "(tfbuild renders one of them into .tf_configure.bazelrc)")
    directory, _, name = cc.rpartition("/")
    if name.startswith("clang") and not name.startswith("clang++"):
        name = "clang++" + name[len("clang"):]
    elif name.startswith("gcc"):
        name = "g++" + name[len("gcc"):]
    elif name == "cc":
        name = "c++"
    return cc, (directory + "/" + name if directory else name)

_COMPILE = """set -u
compiler="$1"; out="$2"; src="$3"; shift 3
"$compiler" -O2 "$@" -fPIC -c -o "$out" "$PWD/$src" || {
  status=$?; echo "ERROR: compiling $src failed (exit $status)" >&2; exit 1; }
"""

_LINK = """set -u
compiler="$1"; out="$2"; shift 2
"$compiler" "$@" || { status=$?; echo "ERROR: linking libcanary.so failed (exit $status)" >&2; exit 1; }
"""

def _library_impl(ctx):
    if ctx.attr._hermetic_cc[BoolFlagInfo].value:
        fail("the canary has no hermetic toolchain: it compiles with the rc file's compiler " +
             "(--@rules_ml_toolchain//common:enable_hermetic_cc=True is TensorFlow's route)")
    cc, cxx = _compilers(ctx)
    cpp = ctx.fragments.cpp
    sysroot = ctx.attr._crosstool[CanaryCrosstoolInfo].sysroot
    link = ["--sysroot=" + sysroot] if sysroot else []
    copts = link + cpp.copts
    objects = []
    for src in ctx.files.srcs:
        c = src.extension == "c"
        obj = ctx.actions.declare_file("_objs/%s/%s.o" % (ctx.label.name, src.basename[:-len(src.extension) - 1]))
        ctx.actions.run_shell(
            command = _COMPILE,
            arguments = [cc if c else cxx, obj.path, src.path] + copts + (cpp.conlyopts if c else cpp.cxxopts),
            inputs = [src],
            outputs = [obj],
            use_default_shell_env = True,
            mnemonic = "CppCompile",
            progress_message = "Compiling " + src.short_path,
        )
        objects.append(obj)
    ctx.actions.run_shell(
        command = _LINK,
        arguments = [cxx, ctx.outputs.out.path] + link + ["-shared", "-o", ctx.outputs.out.path] + [o.path for o in objects],
        inputs = objects,
        outputs = [ctx.outputs.out],
        use_default_shell_env = True,
        mnemonic = "CppLink",
        progress_message = "Linking " + ctx.outputs.out.basename,
    )
    flags = [f for f in cpp.copts if not f.startswith(_PREFIX_MAPS)]
    return [
        DefaultInfo(files = depset([ctx.outputs.out])),
        CanaryLibraryInfo(library = ctx.outputs.out, flags = flags),
    ]

canary_library = rule(
    implementation = _library_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".c", ".cc"]),
        "out": attr.output(mandatory = True),
        "_crosstool": attr.label(
            default = configuration_field(fragment = "cpp", name = "cc_toolchain"),
            providers = [CanaryCrosstoolInfo],
        ),
        "_hermetic_cc": attr.label(default = "@rules_ml_toolchain//common:enable_hermetic_cc"),
    },
    fragments = ["cpp"],
)

def _wheel_impl(ctx):
    info = ctx.attr.library[CanaryLibraryInfo]
    house = ctx.actions.declare_directory("wheel_house")
    staging = ctx.actions.declare_directory("wheel_staging")
    python = ctx.configuration.default_shell_env.get("PYTHON_BIN_PATH", "python3")
    args = ctx.actions.args()
    args.add(ctx.file.packer)
    args.add("--name", WHEEL_NAME)
    args.add("--library", info.library)
    args.add("--init", ctx.file.init)
    args.add("--staging", staging.path)
    args.add("--out", house.path)
    args.add_all(info.flags, format_each = "--flag=%s")
    ctx.actions.run_shell(
        command = '"$@"',
        arguments = [python, args],
        inputs = [ctx.file.packer, info.library, ctx.file.init],
        outputs = [house, staging],
        use_default_shell_env = True,
        mnemonic = "PackWheel",
        progress_message = "Packaging the " + WHEEL_NAME + " wheel",
    )
    return [DefaultInfo(files = depset([house]))]

canary_wheel = rule(
    implementation = _wheel_impl,
    attrs = {
        "library": attr.label(providers = [CanaryLibraryInfo]),
        "init": attr.label(allow_single_file = True),
        "packer": attr.label(allow_single_file = [".py"]),
    },
)
