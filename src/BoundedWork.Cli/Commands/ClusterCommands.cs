using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw cluster QUEUE</c>: a durable queue's cluster (its nodes, the cluster limits and their use, the stored items),
/// and <c>bw cluster set QUEUE ...</c>: its fleet-wide settings, which every node applies. The app validates, applies
/// and logs each change exactly as it does for the HTTP console (the change log and the stored settings name the
/// tool's user and process id); the tool only builds the request, and refuses on its own only what the command line
/// gets wrong.
/// </summary>
internal static class ClusterCommands
{
    private const string Name = "cluster";

    private static readonly string[] s_fields = ["workersPerNode", "maxRunning", "maxRunningPerKey", "startsPerSecond", "startBurst", "fairShare"];

    public static Command Create()
    {
        var queue = new Argument<string?>("queue") { Description = "The durable work queue's name (as registered with AddWorkQueue).", Arity = ArgumentArity.ZeroOrOne };
        var command = new Command(Name, "A durable queue's cluster: every node consuming it (workers, items in flight, last heartbeat, a local pin), the cluster limits and their use, the stored items by state. 'bw cluster set' changes its fleet-wide settings.")
        {
            queue,
            Set(),
        };
        command.SetAction(result =>
        {
            if (result.GetValue(queue) is not { Length: > 0 } name)
            {
                Output.Error("Name the queue: bw cluster QUEUE (or bw cluster set QUEUE ...).");
                return ExitCodes.Usage;
            }

            return Output.Answer(CommonOptions.Client(result).Get(Path(name)), result.GetValue(CommonOptions.Json), static cluster => Output.Terminal.Write(View(cluster)));
        });
        return command;
    }

    private static Command Set()
    {
        var queue = new Argument<string>("queue") { Description = "The durable work queue's name." };
        var workersPerNode = new Option<int?>("--workers-per-node") { Description = "The worker count every node runs for the queue (a node whose count is pinned locally keeps its own, and says so).", CustomParser = NumberParsers.WholeNumber };
        var maxRunning = new Option<int?>("--max-running") { Description = "The most items of the queue running at once across all nodes.", CustomParser = NumberParsers.WholeNumber };
        var perKey = new Option<int?>("--max-running-per-key") { Description = "The most items with the same ordering key running at once across all nodes (1, the default: one at a time, in order).", CustomParser = NumberParsers.WholeNumber };
        var rate = new Option<double?>("--starts-per-second") { Description = "The most item starts per second across all nodes.", CustomParser = Rate };
        var burst = new Option<int?>("--start-burst") { Description = "How many starts may happen at once after a quiet spell (the default: one second's worth).", CustomParser = NumberParsers.WholeNumber };
        var clearWorkers = new Option<bool>("--clear-workers-per-node") { Description = "Let each node run its own worker count again." };
        var clearMaxRunning = new Option<bool>("--clear-max-running") { Description = "Remove the limit on items running at once." };
        var clearRate = new Option<bool>("--clear-starts-per-second") { Description = "Remove the limit on starts per second." };
        var clearBurst = new Option<bool>("--clear-start-burst") { Description = "Go back to the default burst, one second's worth of starts." };
        var fairShare = new FairShareOptions();
        var command = new Command("set", "Change a durable queue's fleet-wide settings in one all-or-nothing step; every node applies them within a second or two: 'bw cluster set payments --max-running 20 --starts-per-second 50', 'bw cluster set payments --tenant-weight acme=4 --max-running-per-tenant 10'.")
        {
            queue, workersPerNode, maxRunning, perKey, rate, burst, clearWorkers, clearMaxRunning, clearRate, clearBurst,
        };
        fairShare.AddTo(command);
        var pairs = new (Option Value, Option<bool> Clear, string Field)[]
        {
            (workersPerNode, clearWorkers, "workersPerNode"),
            (maxRunning, clearMaxRunning, "maxRunning"),
            (rate, clearRate, "startsPerSecond"),
            (burst, clearBurst, "startBurst"),
        };
        command.Validators.Add(result =>
        {
            foreach (var (value, clear, _) in pairs)
            {
                if (result.GetResult(value) is not null && result.GetValue(clear))
                {
                    result.AddError($"Give {value.Name} or {clear.Name}, not both.");
                }
            }

            fairShare.Validate(result);
            if (pairs.All(p => result.GetResult(p.Value) is null && !result.GetValue(p.Clear)) && result.GetResult(perKey) is null && !fairShare.IsGiven(result))
            {
                result.AddError("set needs at least one setting: --workers-per-node, --max-running, --max-running-per-key, --starts-per-second, --start-burst, a fair share option (--default-weight, --tenant-weight, ...), or a --clear-... option.");
            }
        });
        command.SetAction(result =>
        {
            var body = new JsonObject();
            Add(body, "workersPerNode", result.GetValue(workersPerNode), result.GetValue(clearWorkers));
            Add(body, "maxRunning", result.GetValue(maxRunning), result.GetValue(clearMaxRunning));
            Add(body, "maxRunningPerKey", result.GetValue(perKey), clear: false);
            Add(body, "startsPerSecond", result.GetValue(rate), result.GetValue(clearRate));
            Add(body, "startBurst", result.GetValue(burst), result.GetValue(clearBurst));
            fairShare.AddChange(body, result);
            return ChangeAnswer.Send(
                result,
                "PATCH",
                Path(result.GetValue(queue)!),
                body,
                s_fields,
                static (doc, section, field) => Value(doc, section, field),
                static doc => Safe(doc.Text("queue")),
                static doc => $"fleet-wide settings version {doc.Long("current", "version")}; every node applies them within a second or two ('bw cluster {Markup.Escape(Safe(doc.Text("queue")))}' shows each node's settings version).");
        });
        return command;
    }

    /// <summary>A number of starts per second as the command line gives it (<c>12.5</c>), or an error naming the option.</summary>
    private static double? Rate(ArgumentResult result) => NumberParsers.Number(result, "a number of starts per second");

    private static void Add<T>(JsonObject body, string field, T? value, bool clear)
        where T : struct
    {
        if (clear)
        {
            body[field] = null;
        }
        else if (value is { } v)
        {
            body[field] = JsonValue.Create(v);
        }
    }

    private static string PauseEnd(JsonElement pause) => pause.Text("until") is { Length: > 0 } until ? "until " + until : "until resumed";

    private static string Path(string queue) => $"/queues/{Uri.EscapeDataString(queue)}/{Name}";

    /// <summary>A setting as the tool prints it: its value, or <c>none</c> for a limit that is not set; fair share in one line.</summary>
    private static string Value(JsonElement doc, params string[] path) =>
        path[^1] == "fairShare" ? FairShareOptions.Describe(doc.Get(path), Safe)
        : doc.Get(path).ValueKind is JsonValueKind.Number ? doc.Text(path) : "none";

    private static Rows View(JsonElement cluster)
    {
        var settings = cluster.Get("settings");
        var limits = cluster.Get("limits");
        var storage = cluster.Get("storage");
        var changed = settings.Get("updatedBy").ValueKind == JsonValueKind.String
            ? $", changed by {Safe(settings.Text("updatedBy"))} at {Time(settings, "updatedAt")}"
            : "";
        var header = new Markup($"[bold]{Markup.Escape(Safe(cluster.Text("queue")))}[/]: {cluster.Items("nodes").Count()} live node(s); fleet-wide settings version {settings.Long("version")}{Markup.Escape(changed)}");

        var grid = new Grid().AddColumn(new GridColumn().NoWrap()).AddColumn(new GridColumn().NoWrap()).AddColumn(new GridColumn().NoWrap()).AddColumn(new GridColumn().NoWrap());
        var waiting = limits.Long("waitingForPermit");
        // The limit's use is the handlers running; the items reserved or settling count as running in the storage, apart.
        var handlers = limits.Long("handlersRunning");
        grid.AddRow(
            new Markup("[grey]handlers running / max[/]"),
            new Markup(Danger($"{handlers} / {Value(limits, "maxRunning")}", limits.Number("maxRunning") is { } max && handlers >= max)),
            new Markup("[grey]workers per node[/]"),
            new Text(settings.Get("workersPerNode").ValueKind == JsonValueKind.Number ? settings.Text("workersPerNode") : "each node's own"));
        grid.AddRow(
            new Markup("[grey]starts/s / limit[/]"),
            new Text($"{Number(limits.Number("startsLastSecond") ?? 0)} / {(limits.Number("startsPerSecond") is { } r ? Number(r) + (limits.Number("startBurst") is { } b ? $" (burst {Number(b)})" : "") : "none")}"),
            new Markup("[grey]max running per key[/]"),
            new Text(limits.Text("maxRunningPerKey")));
        grid.AddRow(
            new Markup("[grey]waiting for a permit[/]"),
            new Markup(Danger($"{waiting}{(waiting > 0 ? $" (oldest {Doc.Duration(limits.Number("oldestPermitWaitMs"))})" : "")}", waiting > 0)),
            new Markup("[grey]reserved or settling[/]"),
            new Text(limits.Long("reservedOrSettling").ToString(CultureInfo.InvariantCulture)));

        var stored = new Markup(Markup.Escape(
            $"stored: {storage.Long("ready")} ready{(storage.Long("ready") > 0 ? $" (oldest {Doc.Duration(storage.Number("oldestReadyAgeMs"))})" : "")}, " +
            $"{storage.Long("scheduled")} scheduled, {storage.Long("running")} running, {storage.Long("deadLettered")} dead, {storage.Long("completed")} completed, {storage.Long("cancelled")} cancelled"));

        // The fleet-wide pauses in force (an older app's document has none).
        var pauses = cluster.Get("pauses");
        var pauseLines = new List<string>();
        if (pauses.Get("queue", "reason") is { ValueKind: JsonValueKind.String })
        {
            pauseLines.Add($"[yellow]paused fleet-wide[/] by {Markup.Escape(Safe(pauses.Text("queue", "by")))} {Markup.Escape(PauseEnd(pauses.Get("queue")))}: {Markup.Escape(Safe(pauses.Text("queue", "reason")))}");
        }

        foreach (var key in pauses.Items("keys"))
        {
            pauseLines.Add($"[yellow]key '{Markup.Escape(Safe(key.Text("key")))}' paused[/] by {Markup.Escape(Safe(key.Text("by")))} {Markup.Escape(PauseEnd(key))}: {Markup.Escape(Safe(key.Text("reason")))}");
        }

        var paused = new Markup(pauseLines.Count == 0 ? "[grey]not paused[/]" : string.Join("\n", pauseLines));
        var fair = new Markup("[grey]fair share across tenants:[/] " + Markup.Escape(FairShareOptions.Describe(settings.Get("fairShare"), Safe)));

        var nodes = cluster.Items("nodes").ToList();
        if (nodes.Count == 0)
        {
            return new Rows(header, paused, grid, fair, stored, new Markup("[grey]No live node consumes the queue.[/]"));
        }

        var table = new Table().Border(TableBorder.Simple);
        table.AddColumn(new TableColumn("NODE"));
        table.AddColumn(new TableColumn("HOST"));
        table.AddColumn(new TableColumn("PID").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("VERSION"));
        table.AddColumn(new TableColumn("WORKERS").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("IN FLIGHT").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("RUNNING").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("COMPLETED").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("FAILED").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("SETTINGS").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("LAST SEEN").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("PINNED").NoWrap());
        var readAt = cluster.Get("readAt") is { ValueKind: JsonValueKind.String } readText && readText.TryGetDateTimeOffset(out var read) ? read : (DateTimeOffset?)null;
        foreach (var node in nodes)
        {
            var lastSeen = node.Get("lastSeen") is { ValueKind: JsonValueKind.String } seenText && seenText.TryGetDateTimeOffset(out var seen) && readAt is { } now
                ? Doc.Duration(Math.Max(0, (now - seen).TotalMilliseconds)) + " ago"
                : "-";
            table.AddRow(
                Markup.Escape(Safe(node.Text("name"))),
                Markup.Escape(Safe(node.Text("host"))),
                node.Text("processId"),
                Markup.Escape(Safe(node.Text("version"))),
                node.Text("workers"),
                node.Text("inFlight"),
                node.Long("handlersRunning").ToString(CultureInfo.InvariantCulture),
                node.Text("completed"),
                node.Long("failed") > 0 ? $"[red]{node.Long("failed")}[/]" : "0",
                "v" + node.Text("settingsVersion"),
                lastSeen,
                node.Flag("pinnedLocally") ? "[yellow]pinned locally[/]" : "-");
        }

        return new Rows(header, paused, grid, fair, stored, table);
    }

    private static string Number(double value) => value.ToString("0.###", CultureInfo.InvariantCulture);

    private static string Danger(string text, bool danger) => danger ? $"[red]{Markup.Escape(text)}[/]" : Markup.Escape(text);

    private static string Time(JsonElement e, string field) =>
        e.Get(field) is { ValueKind: JsonValueKind.String } t && t.TryGetDateTimeOffset(out var time)
            ? time.ToUniversalTime().ToString("yyyy-MM-dd HH:mm:ss'Z'", CultureInfo.InvariantCulture)
            : "";

    /// <summary>
    /// Text from the storage (a node's name, host or version, who changed the settings) made safe for a terminal:
    /// control characters, escape sequences included, are shown as escapes (<c>\r</c>, <c>\n</c>, <c>\u001b</c>), so a
    /// row can neither break the table's lines nor drive the terminal.
    /// </summary>
    internal static string Safe(string text)
    {
        if (!text.Any(IsUnsafe))
        {
            return text;
        }

        var builder = new StringBuilder(text.Length + 16);
        foreach (var c in text)
        {
            _ = c switch
            {
                '\r' => builder.Append("\\r"),
                '\n' => builder.Append("\\n"),
                '\t' => builder.Append("\\t"),
                _ when IsUnsafe(c) => builder.Append(CultureInfo.InvariantCulture, $"\\u{(int)c:x4}"),
                _ => builder.Append(c),
            };
        }

        return builder.ToString();
    }

    private static bool IsUnsafe(char c) => char.IsControl(c) || c is '\u2028' or '\u2029';
}
