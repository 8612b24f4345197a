using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Cli.Rendering;
using BoundedWork.Cli.Targets;
using Microsoft.Diagnostics.NETCore.Client;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>The read verbs: ps, list, show, threadpool.</summary>
internal static class ReadCommands
{
    public static Command Ps()
    {
        var all = new Option<bool>("--all", "-a") { Description = "Also list .NET processes without a BoundedWork socket ('bw doctor' and 'bw top' read those through the runtime)." };
        var command = new Command("ps", "List the processes on this machine that expose BoundedWork (and, with --all, every .NET process).") { all };
        command.SetAction(result => PsCore(result.GetValue(all), result.GetValue(CommonOptions.Json), TimeSpan.FromSeconds(result.GetValue(CommonOptions.Timeout))));
        return command;
    }

    public static Command List()
    {
        var command = new Command("list", "Every executor of the process: workers busy/live/target (max), queue, oldest item's age, policy, rates, failures, health.");
        command.SetAction(result =>
        {
            var client = CommonOptions.Client(result);
            var executors = client.Get("/executors");
            if (!executors.IsSuccess)
            {
                // A refused list prints its problem document too, with or without --json.
                return Output.Problem(executors, json: true);
            }

            return Output.Answer(executors, result.GetValue(CommonOptions.Json), executorList =>
            {
                var pool = client.Get("/threadpool");
                Output.Terminal.Write(Views.Executors(executorList, withHistory: false));
                Output.Terminal.MarkupLine(pool.Json.Flag("isStarved")
                    ? $"[red]The shared ThreadPool is starved: {Markup.Escape(pool.Json.Text("starvation"))}[/] Run 'bw threadpool' or 'bw doctor'."
                    : $"[grey]The shared ThreadPool is not starved (probe latency {Doc.Duration(pool.Json.Number("queueLatencyMs"))}).[/]");
            });
        });
        return command;
    }

    public static Command Show()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list'; case does not matter)." };
        var command = new Command("show", "One executor in full, with the items its workers run now (worker, elapsed, method).") { name };
        command.SetAction(result =>
        {
            var answer = CommonOptions.Client(result).Get("/executors/" + Uri.EscapeDataString(result.GetValue(name)!));
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), static executor => Output.Terminal.Write(Views.Executor(executor)));
        });
        return command;
    }

    public static Command ThreadPool()
    {
        var command = new Command("threadpool", "The shared ThreadPool as the process sees it: threads, pending items, the probe's latency, starved or not.");
        command.SetAction(result =>
        {
            var answer = CommonOptions.Client(result).Get("/threadpool?history=true");
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), static pool => Output.Terminal.Write(Views.ThreadPool(pool, withHistory: true)));
        });
        return command;
    }

    private static int PsCore(bool all, bool json, TimeSpan timeout)
    {
        var rows = new List<PsRow>();
        foreach (var entry in SocketDirectory.FindAll())
        {
            rows.Add(Describe(entry, timeout));
        }

        if (all)
        {
            var withSocket = rows.Select(r => r.ProcessId).ToHashSet();
            foreach (var pid in SafePublishedProcesses().Where(p => p != Environment.ProcessId && !withSocket.Contains(p)))
            {
                rows.Add(new PsRow(pid, NameOf(pid), null, null, [], null, "no socket: doctor and top only"));
            }
        }

        if (json)
        {
            Console.Out.WriteLine(JsonSerializer.Serialize(new PsDocument(rows), PsJson.Default.PsDocument));
            return ExitCodes.Ok;
        }

        if (rows.Count == 0)
        {
            Output.Terminal.MarkupLine(all
                ? "[grey]No .NET process found.[/]"
                : "[grey]No process exposes a BoundedWork diagnostics socket; 'bw ps --all' lists every .NET process.[/]");
            return ExitCodes.Ok;
        }

        var table = new Table().Border(TableBorder.Simple);
        foreach (var column in (string[])["PID", "APP", "STARTED", "EXECUTORS", "STATUS", "SOCKET"])
        {
            table.AddColumn(column);
        }

        foreach (var row in rows)
        {
            var status = row.Status == "ok" ? "[green]ok[/]" : $"[yellow]{Markup.Escape(row.Status)}[/]";
            table.AddRow(
                row.ProcessId.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(row.Application ?? row.Name ?? "?"),
                row.StartedAt?.ToLocalTime().ToString("yyyy-MM-dd HH:mm:ss", CultureInfo.InvariantCulture) ?? "",
                Markup.Escape(string.Join(", ", row.Executors)),
                status,
                Markup.Escape(row.Socket ?? ""));
        }

        Output.Terminal.Write(table);
        return ExitCodes.Ok;
    }

    private static PsRow Describe(SocketEntry entry, TimeSpan timeout)
    {
        if (!Target.IsRunning(entry.ProcessId))
        {
            return new PsRow(entry.ProcessId, null, null, null, [], entry.Path, "stale (process exited)");
        }

        try
        {
            var answer = new AdminSocketClient(entry.Path, timeout).Get("/process");
            if (!answer.IsSuccess)
            {
                return new PsRow(entry.ProcessId, NameOf(entry.ProcessId), null, null, [], entry.Path, $"answered {answer.Status}");
            }

            var doc = answer.Json;
            return new PsRow(
                entry.ProcessId,
                doc.Text("processName"),
                doc.Text("application"),
                doc.Get("startedAt").ValueKind == JsonValueKind.String ? doc.Get("startedAt").GetDateTimeOffset() : null,
                [.. doc.Items("executors").Select(e => e.GetString() ?? "")],
                entry.Path,
                "ok");
        }
        catch (ToolException e)
        {
            return new PsRow(entry.ProcessId, NameOf(entry.ProcessId), null, null, [], entry.Path, e.Message);
        }
    }

    private static IEnumerable<int> SafePublishedProcesses()
    {
        try
        {
            return DiagnosticsClient.GetPublishedProcesses();
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or PlatformNotSupportedException)
        {
            return [];
        }
    }

    private static string? NameOf(int pid)
    {
        try
        {
            using var process = System.Diagnostics.Process.GetProcessById(pid);
            return process.ProcessName;
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException)
        {
            return null;
        }
    }
}

/// <summary>One line of <c>bw ps</c>.</summary>
internal sealed record PsRow(int ProcessId, string? Name, string? Application, DateTimeOffset? StartedAt, IReadOnlyList<string> Executors, string? Socket, string Status);

/// <summary><c>bw ps --json</c>.</summary>
internal sealed record PsDocument(IReadOnlyList<PsRow> Processes);

[System.Text.Json.Serialization.JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[System.Text.Json.Serialization.JsonSerializable(typeof(PsDocument))]
internal sealed partial class PsJson : System.Text.Json.Serialization.JsonSerializerContext;
