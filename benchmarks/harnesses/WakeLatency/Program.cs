using BoundedWork.Benchmarks.Infrastructure;
using BoundedWork.Benchmarks.WakeLatency;

// Wake-from-idle latency per contender, one item at a time with 5 ms between items (see benchmarks/README.md):
//   dotnet run -c Release --project benchmarks/harnesses/WakeLatency -- [samples]
return HarnessProgram.Run(() => WakeLatencyCheck.Run(args));
