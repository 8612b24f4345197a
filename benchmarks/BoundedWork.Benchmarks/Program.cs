using BenchmarkDotNet.Running;
using BoundedWork.Benchmarks;
using BoundedWork.Benchmarks.Compare;
using BoundedWork.Benchmarks.Trickle;

// Console modes that are not BenchmarkDotNet benchmarks (see benchmarks/README.md):
//   -- idle [seconds]      idle-CPU check
//   -- wake [samples]      wake-from-idle latency check
//   -- compare [options]   BoundedExecutor and the raw channel with the Java harness's method (compare-java.sh)
//   -- trickle [options]   CPU per item and wake-up latency at fixed arrival rates (trickle.sh)
//   -- trickle-child ...   one row of the trickle benchmark, started by `trickle` in a process of its own
// Anything else goes to BenchmarkDotNet, e.g. `-- --filter '*'` for everything or `-- --filter '*' --job dry`.
if (args.Length > 0 && s_modes.TryGetValue(args[0], out var mode))
{
    try
    {
        return mode(args.AsSpan(1).ToArray());
    }
    catch (ArgumentException ex)
    {
        // A bad command line: say what is wrong, without a stack trace.
        Console.Error.WriteLine(ex.Message);
        return 2;
    }
}

var summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args, BenchmarkConfig.Create());

// A non-zero exit code when any benchmark failed (a hang, a crash, a build error), so the smoke run can gate CI.
var failed = summaries.Any(summary => summary.HasCriticalValidationErrors || summary.Reports.Any(report => !report.Success));
return failed ? 1 : 0;

/// <summary>The program's entry point (top-level statements) and its console modes.</summary>
internal sealed partial class Program
{
    private static readonly Dictionary<string, Func<string[], int>> s_modes = new(StringComparer.OrdinalIgnoreCase)
    {
        ["idle"] = args => IdleCpuCheck.Run(args),
        ["wake"] = args => WakeLatencyCheck.Run(args),
        ["compare"] = args => CompareHarness.Run(args),
        ["trickle"] = args => TrickleHarness.Run(args),
        ["trickle-child"] = args => TrickleChild.Run(args),
    };
}
