using BoundedWork.Benchmarks.IdleCpu;
using BoundedWork.Benchmarks.Infrastructure;

// Idle-CPU check: exits non-zero when an idle executor costs more CPU than no executor (see benchmarks/README.md):
//   dotnet run -c Release --project benchmarks/harnesses/IdleCpu -- [seconds]
return HarnessProgram.Run(() => IdleCpuCheck.Run(args));
