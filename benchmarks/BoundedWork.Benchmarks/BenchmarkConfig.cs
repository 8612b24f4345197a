using BenchmarkDotNet.Configs;

namespace BoundedWork.Benchmarks;

/// <summary>
/// The one place for suite-wide BenchmarkDotNet settings. The defaults (out-of-process toolchain, which works with
/// .NET 10 under BenchmarkDotNet 0.14.0) are what the suite uses; jobs come from the command line (`--job dry`,
/// `--job short`, ...) and diagnosers from the attributes on each class.
/// </summary>
internal static class BenchmarkConfig
{
    public static IConfig Create() => DefaultConfig.Instance;
}
