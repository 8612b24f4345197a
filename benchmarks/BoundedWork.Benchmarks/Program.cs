using BenchmarkDotNet.Running;
using BoundedWork.Benchmarks;
using BoundedWork.Benchmarks.Compare;
using BoundedWork.Benchmarks.Trickle;

// `-- idle [seconds]` runs the idle-CPU check and `-- wake [samples]` the wake-from-idle latency check (neither is a
// BenchmarkDotNet benchmark); anything else goes to BenchmarkDotNet, e.g. `-- --filter '*'` for everything or
// `-- --filter '*' --job dry` for the smoke run.
if (args.Length > 0 && string.Equals(args[0], "idle", StringComparison.OrdinalIgnoreCase))
{
    return IdleCpuCheck.Run(args.AsSpan(1));
}

if (args.Length > 0 && string.Equals(args[0], "wake", StringComparison.OrdinalIgnoreCase))
{
    return WakeLatencyCheck.Run(args.AsSpan(1));
}

if (args.Length > 0 && string.Equals(args[0], "compare", StringComparison.OrdinalIgnoreCase))
{
    return CompareHarness.Run(args.AsSpan(1));
}

if (args.Length > 0 && string.Equals(args[0], "trickle", StringComparison.OrdinalIgnoreCase))
{
    return TrickleHarness.Run(args.AsSpan(1));
}

if (args.Length > 0 && string.Equals(args[0], "trickle-child", StringComparison.OrdinalIgnoreCase))
{
    return TrickleChild.Run(args.AsSpan(1));
}

var summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args, BenchmarkConfig.Create());

// A non-zero exit code when any benchmark failed (a hang, a crash, a build error), so the smoke run can gate CI.
var failed = summaries.Any(summary => summary.HasCriticalValidationErrors || summary.Reports.Any(report => !report.Success));
return failed ? 1 : 0;
