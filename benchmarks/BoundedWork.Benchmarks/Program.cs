using BenchmarkDotNet.Running;
using BoundedWork.Benchmarks;

// The BenchmarkDotNet suite (see benchmarks/README.md): `-- --filter '*'` for everything, `-- --filter '*' --job dry`
// for the smoke run. The console harnesses are programs of their own under benchmarks/harnesses/.
var summaries = BenchmarkSwitcher.FromAssembly(typeof(BenchmarkConfig).Assembly).Run(args, BenchmarkConfig.Create());

// A non-zero exit code when any benchmark failed (a hang, a crash, a build error), so the smoke run can gate CI.
var failed = summaries.Any(summary => summary.HasCriticalValidationErrors || summary.Reports.Any(report => !report.Success));
return failed ? 1 : 0;
