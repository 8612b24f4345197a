using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw schedules</c>: the app's in-memory recurring schedules (timing, state, next and last run, last outcome, the
/// counters), and <c>pause</c>, <c>resume</c>, <c>trigger</c> and <c>set</c> on one of them. The app validates, applies
/// and logs each change as it does for the HTTP console (the log names the tool's user and process id).
/// </summary>
internal static class ScheduleCommands
{
    private const string Name = "schedules";

    private const string DurableName = "durable-schedules";

    private static readonly string[] s_fields = ["schedule", "paused"];

    private static readonly string[] s_durableFields = ["definition", "missedTicks", "paused"];

    /// <summary><c>--durable</c>: the command is about a durable schedule (stored, shared by the fleet).</summary>
    private static readonly Option<bool> s_durable = new("--durable", "-d")
    {
        Description = "Operate a durable schedule (stored in the database, shared by every node) rather than an in-memory one.",
        Recursive = true,
    };

    public static Command Create()
    {
        var schedule = new Argument<string?>("schedule") { Description = "One schedule's name (any case); all of them when left out.", Arity = ArgumentArity.ZeroOrOne };
        var command = new Command(Name, "The app's recurring schedules: timing, executor, paused or not, next and last run, last outcome and error, runs, failures and skipped ticks. 'bw schedules pause|resume|trigger|set NAME' operates one.")
        {
            schedule,
            Toggle("pause", true),
            Toggle("resume", false),
            Trigger(),
            Set(),
            Add(),
            Remove(),
            s_durable,
        };
        command.SetAction(result =>
        {
            var json = result.GetValue(CommonOptions.Json);
            var client = CommonOptions.Client(result);
            if (result.GetValue(s_durable))
            {
                return result.GetValue(schedule) is { Length: > 0 } one
                    ? Output.Answer(client.Get(DurablePath(one)), json, static s => Output.Terminal.Write(DurableTable([s])))
                    : Output.Answer(client.Get("/" + DurableName), json, static list => Output.Terminal.Write(DurableTable([.. list.Items("schedules")])));
            }

            if (result.GetValue(schedule) is { Length: > 0 } name)
            {
                return Output.Answer(client.Get(Path(name)), json, static s => Output.Terminal.Write(Table([s])));
            }

            var code = Output.Answer(client.Get("/" + Name), json, static list => Output.Terminal.Write(Table([.. list.Items("schedules")])));
            if (code == ExitCodes.Ok && !json)
            {
                // The durable ones follow when the app has any (an app without the route answers 404: nothing to add).
                var durable = client.Get("/" + DurableName);
                if (durable.IsSuccess && durable.Json.Items("schedules").Any())
                {
                    Output.Terminal.MarkupLine("[bold]Durable schedules[/] (bw schedules --durable ...)");
                    Output.Terminal.Write(DurableTable([.. durable.Json.Items("schedules")]));
                }
            }

            return code;
        });
        return command;
    }

    private static Command Toggle(string verb, bool paused)
    {
        var schedule = new Argument<string>("schedule") { Description = "The schedule's name." };
        var command = new Command(verb, paused ? "Pause a schedule: no tick runs until it is resumed; a run already going goes on." : "Resume a paused schedule from its next tick after now.") { schedule };
        command.SetAction(result => Change(result, result.GetValue(schedule)!, new JsonObject { ["paused"] = paused }));
        return command;
    }

    private static Command Trigger()
    {
        var schedule = new Argument<string>("schedule") { Description = "The schedule's name." };
        var command = new Command("trigger", "Run a schedule now, out of its timing (also while paused), under its overlap policy.") { schedule };
        command.SetAction(result =>
        {
            var durable = result.GetValue(s_durable);
            var name = result.GetValue(schedule)!;
            var answer = CommonOptions.Client(result).Send("POST", (durable ? DurablePath(name) : Path(name)) + "/trigger", "{}");
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), doc =>
                Output.Terminal.MarkupLine($"[bold]{Markup.Escape(ClusterCommands.Safe(doc.Text("name")))}[/]: triggered, "
                    + (durable ? $"item {doc.Long("itemId").ToString(CultureInfo.InvariantCulture)} enqueued" : Markup.Escape(doc.Text("result")))));
        });
        return command;
    }

    private static Command Set()
    {
        var schedule = new Argument<string>("schedule") { Description = "The schedule's name." };
        var cron = new Option<string?>("--cron") { Description = "A cron expression: five fields (minute hour day month weekday) or six with seconds first, or a macro such as @daily." };
        var zone = new Option<string?>("--time-zone") { Description = "The time zone the cron expression is read in (Europe/Berlin); the schedule's own when left out." };
        var interval = new Option<string?>("--interval") { Description = "An interval instead of a cron expression, such as 00:05:00." };
        var missed = new Option<string?>("--missed-ticks") { Description = "A durable schedule's new missed-tick policy (with --durable): latestOnce, skip or each." };
        var command = new Command("set", "Give a schedule new timing, from its next tick after now: 'bw schedules set nightly --cron \"0 3 * * *\" --time-zone Europe/Berlin'; or a durable schedule a new missed-tick policy: 'bw schedules set -d nightly --missed-ticks skip'.") { schedule, cron, zone, interval, missed };
        command.Validators.Add(result =>
        {
            var timed = result.GetResult(cron) is not null || result.GetResult(zone) is not null;
            var policy = result.GetResult(missed) is not null;
            if (policy && result.GetValue(s_durable) is false)
            {
                result.AddError("--missed-ticks applies to durable schedules: add --durable.");
            }

            var every = result.GetResult(interval) is not null;
            if (timed && every)
            {
                result.AddError("set needs --cron (with an optional --time-zone) or --interval, not both.");
            }
            else if (!timed && !every && !policy)
            {
                result.AddError("set needs --cron (with an optional --time-zone) or --interval (or, for a durable schedule, --missed-ticks).");
            }
        });
        command.SetAction(result =>
        {
            var body = new JsonObject();
            if (result.GetValue(cron) is { } c)
            {
                body["cron"] = c;
            }

            if (result.GetValue(zone) is { } z)
            {
                body["timeZone"] = z;
            }

            if (result.GetValue(interval) is { } i)
            {
                body["interval"] = i;
            }

            if (result.GetValue(missed) is { } m)
            {
                body["missedTicks"] = m;
            }

            return Change(result, result.GetValue(schedule)!, body);
        });
        return command;
    }

    private static Command Add()
    {
        var schedule = new Argument<string>("schedule") { Description = "The new durable schedule's name." };
        var queue = new Option<string?>("--queue") { Description = "The queue its ticks are enqueued on; may be left out when one queue runs durable schedules." };
        var cron = new Option<string?>("--cron") { Description = "A cron expression: five fields (minute hour day month weekday) or six with seconds first, or a macro such as @daily." };
        var zone = new Option<string?>("--time-zone") { Description = "The time zone the cron expression is read in (Europe/Berlin); UTC when left out." };
        var interval = new Option<string?>("--interval") { Description = "An interval instead of a cron expression, such as 00:05:00." };
        var missed = new Option<string?>("--missed-ticks") { Description = "What happens to ticks missed while no node ran: latestOnce (the default), skip or each." };
        var paused = new Option<bool>("--paused") { Description = "Store it paused." };
        var command = new Command("add", "Store a durable schedule for the whole fleet: 'bw schedules add nightly --queue reconciliation --cron \"0 2 * * *\" --time-zone Europe/Berlin'.")
        {
            schedule, queue, cron, zone, interval, missed, paused,
        };
        command.SetAction(result =>
        {
            var body = new JsonObject { ["name"] = result.GetValue(schedule) };
            foreach (var (field, value) in (ReadOnlySpan<(string, string?)>)[("queue", result.GetValue(queue)), ("cron", result.GetValue(cron)), ("timeZone", result.GetValue(zone)), ("interval", result.GetValue(interval)), ("missedTicks", result.GetValue(missed))])
            {
                if (value is not null)
                {
                    body[field] = value;
                }
            }

            if (result.GetValue(paused))
            {
                body["paused"] = true;
            }

            var answer = CommonOptions.Client(result).Send("POST", "/" + DurableName, body.ToJsonString());
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), static doc =>
            {
                Output.Terminal.MarkupLine($"[bold]{Markup.Escape(ClusterCommands.Safe(doc.Text("name")))}[/]: added on {Markup.Escape(ClusterCommands.Safe(doc.Text("queue")))}, {Markup.Escape(ClusterCommands.Safe(doc.Text("definition")))}{(doc.Flag("paused") ? ", paused" : string.Empty)}");
                Output.Terminal.MarkupLine($"[grey]next run {Time(doc, "nextRunAt")}[/]");
            });
        });
        return command;
    }

    private static Command Remove()
    {
        var schedule = new Argument<string>("schedule") { Description = "The durable schedule's name." };
        var command = new Command("remove", "Delete a stored durable schedule (one defined in code or configuration is stored again when a node starts).") { schedule };
        command.SetAction(result =>
        {
            var answer = CommonOptions.Client(result).Send("DELETE", DurablePath(result.GetValue(schedule)!), "{}");
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), static doc =>
                Output.Terminal.MarkupLine($"[bold]{Markup.Escape(ClusterCommands.Safe(doc.Text("name")))}[/]: removed"));
        });
        return command;
    }

    private static int Change(ParseResult result, string schedule, JsonObject body) =>
        result.GetValue(s_durable)
            ? ChangeAnswer.Send(
                result,
                "PATCH",
                DurablePath(schedule),
                body,
                s_durableFields,
                static (doc, section, field) => field == "paused" ? (doc.Flag(section, "paused") ? "yes" : "no") : doc.Text(section, field),
                static doc => ClusterCommands.Safe(doc.Text("name")),
                static doc => $"next run {Time(doc.Get("current"), "nextRunAt")} on every node")
            : ChangeAnswer.Send(
            result,
            "PATCH",
            Path(schedule),
            body,
            s_fields,
            static (doc, section, field) => field == "paused" ? (doc.Flag(section, "paused") ? "yes" : "no") : doc.Text(section, field),
            static doc => ClusterCommands.Safe(doc.Text("name")),
            static doc => $"next run {Time(doc.Get("current"), "nextRunAt")}");

    private static string Path(string schedule) => $"/{Name}/{Uri.EscapeDataString(schedule)}";

    private static string DurablePath(string schedule) => $"/{DurableName}/{Uri.EscapeDataString(schedule)}";

    private static Table DurableTable(IReadOnlyList<JsonElement> schedules)
    {
        var table = new Table().Border(TableBorder.Simple);
        foreach (var column in (string[])["SCHEDULE", "TIMING", "QUEUE", "STATE", "NEXT RUN", "LAST RUN", "LAST OUTCOME", "ENQUEUED", "MISSED", "CHANGED BY"])
        {
            table.AddColumn(new TableColumn(column).NoWrap());
        }

        foreach (var s in schedules)
        {
            var outcome = s.Text("lastOutcome");
            var error = s.Get("definitionError").ValueKind == JsonValueKind.String ? " [red](unreadable here)[/]" : "";
            table.AddRow(
                Markup.Escape(ClusterCommands.Safe(s.Text("name"))),
                Markup.Escape(ClusterCommands.Safe(s.Text("definition"))) + error,
                Markup.Escape(ClusterCommands.Safe(s.Text("queue"))),
                s.Flag("paused") ? "[yellow]paused[/]" : "waiting",
                Time(s, "nextRunAt"),
                Time(s, "lastRunAt"),
                outcome is "dead" or "cancelled" ? $"[red]{Markup.Escape(outcome)}[/]" : Markup.Escape(outcome),
                s.Long("enqueued").ToString(CultureInfo.InvariantCulture),
                s.Long("missed") > 0 ? $"[yellow]{s.Long("missed")}[/]" : "0",
                s.Get("changedBy").ValueKind == JsonValueKind.String ? Markup.Escape(ClusterCommands.Safe(s.Text("changedBy"))) : s.Flag("definedInCode") ? "(definition)" : "-");
        }

        return table;
    }

    private static Table Table(IReadOnlyList<JsonElement> schedules)
    {
        var table = new Table().Border(TableBorder.Simple);
        foreach (var column in (string[])["SCHEDULE", "TIMING", "EXECUTOR", "STATE", "NEXT RUN", "LAST RUN", "LAST OUTCOME", "RUNS", "FAILED", "SKIPPED"])
        {
            table.AddColumn(new TableColumn(column).NoWrap());
        }

        foreach (var s in schedules)
        {
            var outcome = s.Text("lastOutcome");
            var error = s.Get("lastError").ValueKind == JsonValueKind.String ? ": " + ClusterCommands.Safe(s.Text("lastError")) : "";
            table.AddRow(
                Markup.Escape(ClusterCommands.Safe(s.Text("name"))),
                Markup.Escape(ClusterCommands.Safe(s.Text("schedule"))),
                Markup.Escape(ClusterCommands.Safe(s.Text("executor"))),
                s.Flag("paused") ? "[yellow]paused[/]" : s.Flag("running") ? "running" : "waiting",
                Time(s, "nextRunAt"),
                Time(s, "lastStartedAt"),
                outcome is "failed" or "rejected" ? $"[red]{Markup.Escape(outcome + error)}[/]" : Markup.Escape(outcome),
                (s.Long("succeeded") + s.Long("failed")).ToString(CultureInfo.InvariantCulture),
                s.Long("failed") > 0 ? $"[red]{s.Long("failed")}[/]" : "0",
                s.Long("skipped").ToString(CultureInfo.InvariantCulture));
        }

        return table;
    }

    private static string Time(JsonElement e, string field) =>
        e.Get(field) is { ValueKind: JsonValueKind.String } t && t.TryGetDateTimeOffset(out var time)
            ? time.ToUniversalTime().ToString("yyyy-MM-dd HH:mm:ss'Z'", CultureInfo.InvariantCulture)
            : "-";
}
