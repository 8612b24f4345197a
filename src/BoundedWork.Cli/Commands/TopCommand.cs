using System.Collections.Concurrent;
using System.CommandLine;
using System.Globalization;
using BoundedWork.Cli.Doctor;
using BoundedWork.Diagnostics.Internal;
using BoundedWork.Cli.Rendering;
using BoundedWork.Cli.Targets;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw top</c>: the executors and the shared ThreadPool, refreshed every second, from the app's socket; or, when the
/// app has no socket, a read-only view of the runtime's counters and the BoundedWork meter over EventPipe.
/// </summary>
internal static class TopCommand
{
    public static Command Create()
    {
        var iterations = new Option<int?>("--iterations", "-n") { Description = "Stop after this many refreshes (default: until Ctrl-C).", CustomParser = NumberParsers.WholeNumber };
        var interval = new Option<double>("--interval") { Description = "Seconds between refreshes.", DefaultValueFactory = _ => 1, CustomParser = NumberParsers.Seconds };
        var command = new Command("top", "A live view of the executors and the shared ThreadPool, refreshed every second; Ctrl-C to quit.") { iterations, interval };
        command.SetAction(async (result, cancellationToken) =>
        {
            var every = TimeSpan.FromSeconds(Math.Clamp(result.GetValue(interval), 0.2, 60));
            var count = result.GetValue(iterations);
            var pid = result.GetValue(CommonOptions.ProcessId);
            AdminSocketClient client;
            try
            {
                client = CommonOptions.Client(result);
            }
            catch (ToolException) when (pid is { } p && result.GetValue(CommonOptions.Socket) is null && Target.IsRunning(p)
                && !SocketDirectory.FindAll().Any(e => e.ProcessId == p))
            {
                return await CountersView(p, every, count, cancellationToken);
            }

            return await Loop(() => SocketFrame(client), every, count, cancellationToken);
        });
        return command;
    }

    private static Rows SocketFrame(AdminSocketClient client)
    {
        var pool = client.Get("/threadpool?history=true");
        var executors = client.Get("/executors?history=true");
        if (!pool.IsSuccess || !executors.IsSuccess)
        {
            throw ToolException.Unreachable($"'{client.Path}' answered {pool.Status}/{executors.Status}.");
        }

        return new Rows(
            new Markup($"[grey]bw top — {Markup.Escape(client.Path)} — {DateTime.Now.ToString("HH:mm:ss", CultureInfo.InvariantCulture)} — Ctrl-C to quit[/]"),
            Views.ThreadPool(pool.Json, withHistory: true),
            Views.Executors(executors.Json, withHistory: true));
    }

    private static async Task<int> CountersView(int pid, TimeSpan every, int? count, CancellationToken cancellationToken)
    {
        var latest = new ConcurrentDictionary<(string Name, string? Executor), double>();
        var history = new ConcurrentQueue<double>();
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var reading = RuntimeCounters.CollectAsync(pid, Timeout.InfiniteTimeSpan, s =>
        {
            latest[(s.Name, s.Executor)] = s.Value;
            if (s.Executor is null && s.Name == RuntimeCounters.PoolQueue)
            {
                history.Enqueue(s.Value);
                while (history.Count > 60 && history.TryDequeue(out _))
                {
                }
            }
        }, stop.Token);
        try
        {
            return await Loop(() => CountersFrame(pid, latest, [.. history]), every, count, cancellationToken);
        }
        finally
        {
            await stop.CancelAsync();
            await reading;
        }
    }

    private static Rows CountersFrame(int pid, ConcurrentDictionary<(string Name, string? Executor), double> latest, IReadOnlyList<double> queue)
    {
        string Value(string name, string? executor = null) =>
            latest.TryGetValue((name, executor), out var v) ? v.ToString("0.#", CultureInfo.InvariantCulture) : "-";
        var grid = new Grid().AddColumn(new GridColumn().NoWrap()).AddColumn();
        grid.AddRow(new Markup("[grey]threads[/]"), new Text(Value(RuntimeCounters.PoolThreads)));
        grid.AddRow(new Markup("[grey]queue length[/]"), new Text(Value(RuntimeCounters.PoolQueue)));
        grid.AddRow(new Markup("[grey]queue, last 60 s[/]"), new Text(Sparkline.Of(queue, 60)));
        grid.AddRow(new Markup("[grey]completed/s[/]"), new Text(Value(RuntimeCounters.PoolCompleted)));
        grid.AddRow(new Markup("[grey]CPU %[/]"), new Text(Value(RuntimeCounters.Cpu)));
        var table = new Table().Border(TableBorder.Simple);
        foreach (var column in (string[])["EXECUTOR", "WORKERS busy/live/target", "QUEUE length/capacity"])
        {
            table.AddColumn(column);
        }

        foreach (var executor in latest.Keys.Select(k => k.Executor).OfType<string>().Distinct().Order(StringComparer.Ordinal))
        {
            table.AddRow(
                Markup.Escape(executor),
                $"{Value("boundedwork.workers.busy", executor)}/{Value("boundedwork.workers", executor)}/{Value("boundedwork.workers.target", executor)}",
                $"{Value("boundedwork.queue.length", executor)}/{Value("boundedwork.queue.capacity", executor)}");
        }

        return new Rows(
            new Markup($"[grey]bw top — process {pid}, read-only from the runtime's counters (the app has no BoundedWork socket) — Ctrl-C to quit[/]"),
            new Panel(grid).Header("shared ThreadPool").Border(BoxBorder.Rounded).Expand(),
            table);
    }

    /// <summary>Repaints in place on a terminal (and restores it on exit); writes one frame after another to a file or pipe.</summary>
    private static async Task<int> Loop(Func<IRenderable> frame, TimeSpan every, int? count, CancellationToken cancellationToken)
    {
        var console = Output.Terminal;
        try
        {
            if (console.Profile.Capabilities.Interactive && !Console.IsOutputRedirected)
            {
                await console.Live(frame()).AutoClear(false).StartAsync(async context =>
                {
                    for (var i = 1; count is null || i < count; i++)
                    {
                        await Task.Delay(every, cancellationToken);
                        context.UpdateTarget(frame());
                    }
                });
            }
            else
            {
                for (var i = 0; count is null || i < count; i++)
                {
                    if (i > 0)
                    {
                        await Task.Delay(every, cancellationToken);
                    }

                    console.Write(frame());
                    console.WriteLine();
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // Ctrl-C: a normal way to leave.
        }

        return ExitCodes.Ok;
    }
}
