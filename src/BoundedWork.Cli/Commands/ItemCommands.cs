using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw items</c>: search a durable queue's stored items and act on a selection over the app's socket. Every action is
/// a dry run first (how many it would touch, and its confirmation token); <c>--yes</c> then applies it at once, and
/// <c>--confirm TOKEN</c> applies an earlier dry run (a script checks the count in between). The app validates, applies
/// and audits; the tool only builds the requests.
/// </summary>
internal static class ItemCommands
{
    private const string Name = "items";

    private static readonly string[] s_actions = ["requeue", "cancel", "delete", "set-priority", "set-run-at"];

    public static Command Create()
    {
        var command = new Command(Name, "A durable queue's stored items: search them by state and filters; requeue, cancel, delete, reprioritise or reschedule a selection (a dry run first).")
        {
            Search(),
        };
        foreach (var action in s_actions)
        {
            command.Subcommands.Add(Action(action));
        }

        return command;
    }

    private static Argument<string> Queue() => new("queue") { Description = "The durable work queue's name (as registered with AddWorkQueue)." };

    /// <summary>The selection's options, in the order of the app's fields.</summary>
    private static (string Field, Option<string?> Option)[] Filters() =>
    [
        ("state", new Option<string?>("--state") { Description = "The items' state: ready, scheduled, running, completed, dead-letter or cancelled. Required.", Required = true }),
        ("key", new Option<string?>("--key") { Description = "Only items with this ordering key." }),
        ("enqueuedSince", new Option<string?>("--enqueued-since") { Description = "Only items enqueued at or after this time (ISO 8601, UTC when no offset is given)." }),
        ("enqueuedUntil", new Option<string?>("--enqueued-until") { Description = "Only items enqueued before this time." }),
        ("changedSince", new Option<string?>("--changed-since") { Description = "Only items whose state changed at or after this time (finished; or became or becomes due)." }),
        ("changedUntil", new Option<string?>("--changed-until") { Description = "Only items whose state changed before this time." }),
        ("error", new Option<string?>("--error") { Description = "Only items whose last error contains this text (ignoring case)." }),
        ("path", new Option<string?>("--path") { Description = "A payload field, such as customer.id or lines.0.sku; with --equals." }),
        ("equals", new Option<string?>("--equals") { Description = "The value the payload field at --path must have, as text." }),
    ];

    private static Command Search()
    {
        var queue = Queue();
        var filters = Filters();
        var limit = new Option<int?>("--limit") { Description = "How many to show (1 to 500; the app's default is 50).", CustomParser = NumberParsers.WholeNumber };
        var cursor = new Option<string?>("--cursor") { Description = "Where the next page starts: the cursor the previous page printed." };
        var command = new Command("search", "A page of a queue's items in one state, in that state's order, with the filters given.") { queue, limit, cursor };
        foreach (var (_, option) in filters)
        {
            command.Options.Add(option);
        }

        command.SetAction(result =>
        {
            var name = result.GetValue(queue)!;
            List<(string Field, string? Value)> given = [.. filters.Select(f => (f.Field, result.GetValue(f.Option)))];
            given.Add(("limit", result.GetValue(limit)?.ToString(CultureInfo.InvariantCulture)));
            given.Add(("cursor", result.GetValue(cursor)));
            var parameters = given.Where(p => p.Value is not null).Select(p => $"{p.Field}={Uri.EscapeDataString(p.Value!)}");
            var target = $"{Path(name)}?{string.Join("&", parameters)}";
            return Output.Answer(CommonOptions.Client(result).Get(target), result.GetValue(CommonOptions.Json), page => Output.Terminal.Write(ListView(page, name)));
        });
        return command;
    }

    private static Command Action(string action)
    {
        var queue = Queue();
        var filters = Filters();
        var yes = new Option<bool>("--yes", "-y") { Description = "Apply the action right after its dry run (at most the items it counted)." };
        var confirm = new Option<string?>("--confirm") { Description = "Apply the action with the confirmation token an earlier dry run of the same action and selection printed." };
        var description = action switch
        {
            "requeue" => "Requeue dead letters (state dead-letter) as new deliveries.",
            "cancel" => "Cancel items that have not started (state ready or scheduled).",
            "delete" => "Delete finished items (state completed, dead-letter or cancelled).",
            "set-priority" => "Set the priority of ready or scheduled items (--priority).",
            _ => "Set when ready or scheduled items become due (--run-at).",
        };
        var command = new Command(action, description + " Without --yes or --confirm: a dry run that says how many it would touch.") { queue, yes, confirm };
        foreach (var (_, option) in filters)
        {
            command.Options.Add(option);
        }

        var priority = new Option<int?>("--priority") { Description = "The new priority (-100 to 100).", CustomParser = NumberParsers.WholeNumber, Required = action == "set-priority" };
        var runAt = new Option<string?>("--run-at") { Description = "The new due time (ISO 8601, UTC when no offset is given).", Required = action == "set-run-at" };
        if (action == "set-priority")
        {
            command.Options.Add(priority);
        }
        else if (action == "set-run-at")
        {
            command.Options.Add(runAt);
        }

        command.Validators.Add(result =>
        {
            if (result.GetValue(yes) && result.GetValue(confirm) is not null)
            {
                result.AddError("Give --yes (dry run, then apply) or --confirm TOKEN (apply an earlier dry run), not both.");
            }
        });
        command.SetAction(result =>
        {
            var body = new JsonObject { ["action"] = action };
            foreach (var (field, option) in filters)
            {
                if (result.GetValue(option) is { } value)
                {
                    body[field] = value;
                }
            }

            if (action == "set-priority" && result.GetValue(priority) is { } p)
            {
                body["priority"] = p;
            }
            else if (action == "set-run-at" && result.GetValue(runAt) is { } at)
            {
                body["runAt"] = at;
            }

            var client = CommonOptions.Client(result);
            var json = result.GetValue(CommonOptions.Json);
            var path = Path(result.GetValue(queue)!);
            var token = result.GetValue(confirm);
            if (token is null)
            {
                var preview = client.Send("POST", path + "/preview", body.ToJsonString());
                if (!preview.IsSuccess || !result.GetValue(yes))
                {
                    return Output.Answer(preview, json, PreviewView);
                }

                if (!json)
                {
                    PreviewView(preview.Json);
                }

                token = preview.Json.Text("confirmToken");
            }

            body["confirmToken"] = token;
            return Output.Answer(client.Send("POST", path + "/apply", body.ToJsonString()), json, doc =>
                Output.Terminal.MarkupLine(
                    $"[bold]{Markup.Escape(doc.Text("queue"))}[/]: {doc.Long("applied")} item{(doc.Long("applied") == 1 ? "" : "s")} changed ({Markup.Escape(doc.Text("action"))}), {doc.Long("skipped")} skipped"
                    + (doc.Flag("stoppedAtConfirmedCount") ? "; stopped at the dry run's count: more items match now" : "")
                    + $" [grey]({Markup.Escape(doc.Text("selection"))})[/]"));
        });
        return command;
    }

    private static void PreviewView(JsonElement doc) =>
        Output.Terminal.MarkupLine(
            $"[bold]{Markup.Escape(doc.Text("queue"))}[/]: {Markup.Escape(doc.Text("action"))} would touch {doc.Long("count")} item{(doc.Long("count") == 1 ? "" : "s")}"
            + (doc.Flag("wholeState") ? " [yellow](every item of the state)[/]" : "")
            + $" [grey]({Markup.Escape(doc.Text("selection"))})[/]{Environment.NewLine}"
            + $"[grey]Apply with --yes, or with --confirm {Markup.Escape(doc.Text("confirmToken"))} (at most that many items).[/]");

    private static string Path(string queue) => $"/queues/{Uri.EscapeDataString(queue)}/{Name}";

    private static IRenderable ListView(JsonElement page, string queue)
    {
        var items = page.Items("items").ToList();
        var examined = page.Long("examined");
        var cursor = page.Text("nextCursor");
        var footer = cursor.Length == 0
            ? $"[grey]{items.Count} shown ({examined} examined); no more.[/]"
            : $"[grey]{items.Count} shown ({examined} examined); more with:[/] bw items search {Markup.Escape(queue)} --state {Markup.Escape(page.Text("state"))} ... --cursor {Markup.Escape(cursor)}";
        if (items.Count == 0)
        {
            return new Markup($"[grey]No {Markup.Escape(page.Text("state"))} items match in this page.[/] {footer}{Environment.NewLine}");
        }

        var table = new Table().Border(TableBorder.Simple);
        table.AddColumn(new TableColumn("ID").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("ATTEMPTS").RightAligned());
        table.AddColumn(new TableColumn("PRIORITY").RightAligned());
        table.AddColumn("KEY");
        table.AddColumn(new TableColumn("ENQUEUED").NoWrap());
        table.AddColumn(new TableColumn("DUE / FINISHED").NoWrap());
        table.AddColumn("LAST ERROR");
        foreach (var item in items)
        {
            table.AddRow(
                item.Text("id"),
                item.Text("attempts"),
                item.Text("priority"),
                Markup.Escape(item.Text("orderingKey")),
                Time(item, "enqueuedAt"),
                Time(item, item.Get("finishedAt").ValueKind == JsonValueKind.String ? "finishedAt" : "runAt"),
                Markup.Escape(FirstLine(item.Text("lastError"), 80)));
        }

        return new Rows(table, new Markup(footer));
    }

    private static string Time(JsonElement e, string field) =>
        e.Get(field) is { ValueKind: JsonValueKind.String } t && t.TryGetDateTimeOffset(out var time)
            ? time.ToUniversalTime().ToString("yyyy-MM-dd HH:mm:ss'Z'", CultureInfo.InvariantCulture)
            : "";

    private static string FirstLine(string text, int max)
    {
        var line = text.Split('\n', 2)[0].TrimEnd('\r');
        return line.Length > max ? line[..max] + "..." : line;
    }
}
