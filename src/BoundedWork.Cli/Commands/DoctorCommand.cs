using System.Collections.Concurrent;
using System.CommandLine;
using System.Text.Json;
using System.Text.Json.Serialization;
using BoundedWork.Cli.Doctor;
using BoundedWork.Diagnostics.Internal;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw doctor -p PID</c>: is the process's ThreadPool starved, on what evidence, and which user code holds its
/// threads. Any .NET process, no change to the app: it reads counters and stacks through the runtime's diagnostics port.
/// </summary>
internal static class DoctorCommand
{
    public static Command Create()
    {
        var duration = new Option<double>("--duration")
        {
            Description = "Seconds to read the counters for (at least 2: one reading a second).",
            DefaultValueFactory = _ => 3,
            CustomParser = NumberParsers.Seconds,
        };
        var stackDuration = new Option<double>("--stack-duration")
        {
            Description = "Seconds to sample stacks for (the sampler pauses the process briefly for each sample).",
            DefaultValueFactory = _ => 0.5,
            CustomParser = NumberParsers.Seconds,
            Hidden = true,
        };
        var stacks = new Option<bool>("--stacks") { Description = "Also print the stacks of the pool threads, grouped, innermost frame first." };
        var command = new Command(
            "doctor",
            "Diagnose ThreadPool starvation in a running .NET process: starved or not, the evidence (the pool's queue and threads, " +
            "what each pool thread is doing), the user code that holds the pool's threads, and what to do. Exit code 4 when starved.")
        {
            duration, stackDuration, stacks,
        };
        command.SetAction(async (result, cancellationToken) =>
        {
            var pid = result.GetValue(CommonOptions.ProcessId)
                ?? throw new ToolException(ExitCodes.Usage, "doctor needs the process: bw doctor -p PID (see 'bw ps --all').");
            var report = await RunAsync(pid, TimeSpan.FromSeconds(Math.Clamp(result.GetValue(duration), 2, 600)), TimeSpan.FromSeconds(Math.Clamp(result.GetValue(stackDuration), 0.05, 30)), cancellationToken);
            if (result.GetValue(CommonOptions.Json))
            {
                Console.Out.WriteLine(JsonSerializer.Serialize(report, DoctorJson.Default.DoctorReport));
            }
            else
            {
                Write(report, result.GetValue(stacks));
            }

            return report.Starved ? ExitCodes.Starved : ExitCodes.Ok;
        });
        return command;
    }

    public static async Task<DoctorReport> RunAsync(int pid, TimeSpan duration, TimeSpan stackDuration, CancellationToken cancellationToken)
    {
        var counters = new ConcurrentQueue<CounterSample>();
        // The MVC action each thread runs, from ASP.NET Core's own events: it names the blocked threads whose stacks
        // show only MVC's compiled invoker (an action the JIT inlined into dynamicClass.lambda_method3).
        var actions = new ConcurrentDictionary<int, string>();
        var reading = RuntimeCounters.CollectAsync(pid, duration, counters.Enqueue, cancellationToken, (thread, action) =>
        {
            if (action is null)
            {
                actions.TryRemove(thread, out _);
            }
            else
            {
                actions[thread] = action;
            }
        });

        // Stacks are sampled while the counters are read, at the end of the window.
        var sampling = Task.Run(
            async () =>
            {
                var wait = duration - stackDuration - TimeSpan.FromSeconds(0.5);
                if (wait > TimeSpan.Zero)
                {
                    await Task.Delay(wait, cancellationToken);
                }

                return await StackSampler.SampleAsync(pid, stackDuration, cancellationToken);
            },
            cancellationToken);
        await Task.WhenAll(reading, sampling);
        return Diagnosis.Diagnose(pid, [.. counters], await sampling, actions.ToDictionary());
    }

    private static void Write(DoctorReport report, bool stacks)
    {
        var console = Output.Terminal;
        console.MarkupLine(report.Starved
            ? $"[red bold]{Markup.Escape(report.Verdict)}[/]"
            : $"[green bold]{Markup.Escape(report.Verdict)}[/]");
        console.WriteLine();
        console.MarkupLine("[bold]Evidence[/]");
        console.Write(Bullets(report.Evidence));
        if (report.Executors.Count > 0)
        {
            console.WriteLine();
            console.MarkupLine("[bold]BoundedWork executors[/]");
            console.Write(Bullets(report.Executors.Select(e => $"{e.Name}: {e.Busy:0} of {e.Workers:0} workers busy, {Diagnosis.Items(e.QueueLength)} queued")));
        }

        if (stacks)
        {
            foreach (var stack in report.PoolStacks)
            {
                console.WriteLine();
                console.MarkupLine($"[bold]{stack.Threads} pool thread(s), {Markup.Escape(stack.State)}:[/]");
                foreach (var frame in stack.Frames)
                {
                    console.WriteLine("    " + frame);
                }
            }
        }

        console.WriteLine();
        console.MarkupLine("[bold]What to do[/]");
        foreach (var line in report.Advice)
        {
            if (line.StartsWith("    ", StringComparison.Ordinal))
            {
                Console.Out.WriteLine("  " + line); // code: never wrapped
            }
            else
            {
                console.Write(Bullets([line], bullet: " "));
            }
        }
    }

    /// <summary>One line per item, wrapped lines indented under their item.</summary>
    private static Grid Bullets(IEnumerable<string> lines, string bullet = "-")
    {
        var grid = new Grid().AddColumn(new GridColumn().NoWrap().PadLeft(2).PadRight(1)).AddColumn();
        foreach (var line in lines)
        {
            grid.AddRow(new Text(bullet), new Text(line));
        }

        return grid;
    }
}

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, WriteIndented = true)]
[JsonSerializable(typeof(DoctorReport))]
internal sealed partial class DoctorJson : JsonSerializerContext;
