using BenchmarkDotNet.Analysers;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Engines;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Loggers;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Validators;

namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// <c>[ThreadingDiagnoser]</c> for .NET 10 under BenchmarkDotNet 0.14.0 (the newest version on this machine's
/// package source). 0.14.0 does not know the .NET 10 runtime moniker, so the stock diagnoser's validator thinks
/// the runtime is older than .NET Core 3.0 and refuses every benchmark. The counters it reads
/// (<see cref="ThreadPool.CompletedWorkItemCount"/>, <see cref="Monitor.LockContentionCount"/>) exist on every
/// runtime we target, so this wrapper reports exactly what the stock diagnoser reports and only skips that check.
/// Replace it with <c>[ThreadingDiagnoser]</c> once BenchmarkDotNet is upgraded to a version that knows net10.0.
/// </summary>
[AttributeUsage(AttributeTargets.Class | AttributeTargets.Assembly)]
public sealed class Net10ThreadingDiagnoserAttribute : Attribute, IConfigSource
{
    public Net10ThreadingDiagnoserAttribute()
    {
        Config = ManualConfig.CreateEmpty().AddDiagnoser(new Net10ThreadingDiagnoser());
    }

    public IConfig Config { get; }

    private sealed class Net10ThreadingDiagnoser : IDiagnoser
    {
        private readonly ThreadingDiagnoser _inner = ThreadingDiagnoser.Default;

        public IEnumerable<string> Ids => _inner.Ids;

        public IEnumerable<IExporter> Exporters => _inner.Exporters;

        public IEnumerable<IAnalyser> Analysers => _inner.Analysers;

        public RunMode GetRunMode(BenchmarkCase benchmarkCase) => _inner.GetRunMode(benchmarkCase);

        public void Handle(HostSignal signal, DiagnoserActionParameters parameters) => _inner.Handle(signal, parameters);

        public IEnumerable<Metric> ProcessResults(DiagnoserResults results) => _inner.ProcessResults(results);

        public void DisplayResults(ILogger logger) => _inner.DisplayResults(logger);

        public IEnumerable<ValidationError> Validate(ValidationParameters validationParameters) => [];
    }
}
