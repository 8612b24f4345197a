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

    private static readonly string[] s_fields = ["schedule", "paused"];

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
        };
        command.SetAction(result =>
        {
            var json = result.GetValue(CommonOptions.Json);
            return result.GetValue(schedule) is { Length: > 0 } name
                ? Output.Answer(CommonOptions.Client(result).Get(Path(name)), json, static s => Output.Terminal.Write(Table([s])))
                : Output.Answer(CommonOptions.Client(result).Get("/" + Name), json, static list => Output.Terminal.Write(Table([.. list.Items("schedules")])));
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
            var answer = CommonOptions.Client(result).Send("POST", Path(result.GetValue(schedule)!) + "/trigger", "{}");
            return Output.Answer(answer, result.GetValue(CommonOptions.Json), static doc =>
                Output.Terminal.MarkupLine($"[bold]{Markup.Escape(ClusterCommands.Safe(doc.Text("name")))}[/]: triggered, {Markup.Escape(doc.Text("result"))}"));
        });
        return command;
    }

    private static Command Set()
    {
        var schedule = new Argument<string>("schedule") { Description = "The schedule's name." };
        var cron = new Option<string?>("--cron") { Description = "A cron expression: five fields (minute hour day month weekday) or six with seconds first, or a macro such as @daily." };
        var zone = new Option<string?>("--time-zone") { Description = "The time zone the cron expression is read in (Europe/Berlin); the schedule's own when left out." };
        var interval = new Option<string?>("--interval") { Description = "An interval instead of a cron expression, such as 00:05:00." };
        var command = new Command("set", "Give a schedule new timing, from its next tick after now: 'bw schedules set nightly --cron \"0 3 * * *\" --time-zone Europe/Berlin'.") { schedule, cron, zone, interval };
        command.Validators.Add(result =>
        {
            var timed = result.GetResult(cron) is not null || result.GetResult(zone) is not null;
            if (timed == (result.GetResult(interval) is not null))
            {
                result.AddError("set needs --cron (with an optional --time-zone) or --interval, not both.");
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

            return Change(result, result.GetValue(schedule)!, body);
        });
        return command;
    }

    private static int Change(ParseResult result, string schedule, JsonObject body) =>
        ChangeAnswer.Send(
            result,
            "PATCH",
            Path(schedule),
            body,
            s_fields,
            static (doc, section, field) => field == "paused" ? (doc.Flag(section, "paused") ? "yes" : "no") : doc.Text(section, field),
            static doc => ClusterCommands.Safe(doc.Text("name")),
            static doc => $"next run {Time(doc.Get("current"), "nextRunAt")}");

    private static string Path(string schedule) => $"/{Name}/{Uri.EscapeDataString(schedule)}";

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
