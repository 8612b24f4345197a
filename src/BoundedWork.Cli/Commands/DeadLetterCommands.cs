using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using BoundedWork.Cli.Targets;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw dead-letters</c>: list, show, requeue and purge a durable queue's dead letters over the app's socket. The app
/// validates, applies and logs each change exactly as it does for the HTTP console (the change log names the tool's
/// user and process id); the tool only builds the request, and refuses on its own only what the command line gets wrong.
/// </summary>
internal static class DeadLetterCommands
{
    private const string Name = "dead-letters";

    public static Command Create() => new(Name, "A durable queue's dead letters (items that exhausted their retries): list, show, requeue, purge.")
    {
        List(),
        Show(),
        Change(Requeue: true),
        Change(Requeue: false),
    };

    private static Argument<string> Queue() => new("queue") { Description = "The durable work queue's name (as registered with AddWorkQueue)." };

    private static Option<string?> Since(string what) => new("--since") { Description = $"Only {what} that died at or after this time: ISO 8601, such as 2026-11-23T14:05:00Z (UTC when no offset is given)." };

    private static Option<string?> Until(string what) => new("--until") { Description = $"Only {what} that died before this time: ISO 8601." };

    private static Command List()
    {
        var queue = Queue();
        var since = Since("dead letters");
        var until = Until("dead letters");
        var limit = new Option<int?>("--limit") { Description = "How many to show, the most recent first (1 to 500; the app's default is 50).", CustomParser = NumberParsers.WholeNumber };
        var cursor = new Option<string?>("--cursor") { Description = "Where the next page starts: the cursor the previous page printed." };
        var command = new Command("list", "A page of a queue's dead letters, the most recent first: id, attempts, when it died, its last error.")
        {
            queue, since, until, limit, cursor,
        };
        command.SetAction(result =>
        {
            var name = result.GetValue(queue)!;
            var parameters = new List<string>();
            AddParameter(parameters, "since", result.GetValue(since));
            AddParameter(parameters, "until", result.GetValue(until));
            AddParameter(parameters, "limit", result.GetValue(limit)?.ToString(CultureInfo.InvariantCulture));
            AddParameter(parameters, "cursor", result.GetValue(cursor));
            var target = Path(name) + (parameters.Count == 0 ? "" : "?" + string.Join("&", parameters));
            return Read(result, target, page => Output.Terminal.Write(ListView(page, name)));
        });
        return command;
    }

    private static Command Show()
    {
        var queue = Queue();
        var id = new Argument<long>("id") { Description = "The dead letter's item id (see 'bw dead-letters list').", CustomParser = r => ParseIds(r).FirstOrDefault() };
        var command = new Command("show", "One dead letter in full: attempts, times, trace, its last error and its payload (as JSON; cut when it is long).") { queue, id };
        command.SetAction(result =>
            Read(result, $"{Path(result.GetValue(queue)!)}/{result.GetValue(id).ToString(CultureInfo.InvariantCulture)}", letter => Output.Terminal.Write(LetterView(letter))));
        return command;
    }

    /// <summary><c>requeue</c> (<paramref name="Requeue"/>) or <c>purge</c>: by ids, or every dead letter (in a time window).</summary>
    private static Command Change(bool Requeue)
    {
        var verb = Requeue ? "requeue" : "purge";
        var queue = Queue();
        var ids = new Argument<long[]>("id") { Description = $"The item ids to {verb} (up to 1000).", Arity = ArgumentArity.ZeroOrMore, CustomParser = ParseIds };
        var all = new Option<bool>("--all") { Description = $"{(Requeue ? "Requeue" : "Purge")} every dead letter of the queue (between --since and --until when given)." };
        var since = Since($"{verb} dead letters");
        var until = Until($"{verb} dead letters");
        var yes = new Option<bool>("--yes", "-y") { Description = "Confirm a purge of every dead letter (with --all, --since or --until): it deletes them for good." };
        var command = Requeue
            ? new Command("requeue", "Put dead letters back in the queue as new deliveries (same id, payload and trace context; retries start again): by id, or --all.")
            {
                queue, ids, all, since, until,
            }
            : new Command("purge", "Delete dead letters for good: by id, or --all --yes.")
            {
                queue, ids, all, since, until, yes,
            };
        command.Validators.Add(result =>
        {
            var byId = result.GetResult(ids) is { Tokens.Count: > 0 }; // tokens, not values: a bad id is reported by its parser
            var window = result.GetValue(since) is not null || result.GetValue(until) is not null;
            var every = result.GetValue(all) || window;
            if (byId == every)
            {
                result.AddError(byId
                    ? $"Give item ids or --all (with --since and --until), not both: a time window selects from every dead letter, not from ids."
                    : $"Say which dead letters to {verb}: item ids (bw dead-letters {verb} QUEUE 41 42), or --all (optionally with --since and --until).");
            }
            else if (!Requeue && every && !result.GetValue(yes))
            {
                result.AddError("A purge of every dead letter (--all, --since, --until) deletes them for good: add --yes to confirm. 'bw dead-letters list QUEUE' shows what it would take.");
            }
        });
        command.SetAction(result =>
        {
            var path = Path(result.GetValue(queue)!);
            var selected = result.GetValue(ids) ?? [];
            return selected.Length == 1
                ? Apply(result, Requeue ? "POST" : "DELETE", $"{path}/{selected[0].ToString(CultureInfo.InvariantCulture)}{(Requeue ? "/requeue" : "")}", Requeue ? "{}" : "")
                : Apply(result, "POST", $"{path}/{verb}", Selection(selected, result.GetValue(since), result.GetValue(until)));
        });
        return command;
    }

    /// <summary>Item ids as the app takes them, positive whole numbers; an error that names the argument otherwise.</summary>
    private static long[] ParseIds(ArgumentResult result)
    {
        var ids = new List<long>();
        foreach (var token in result.Tokens)
        {
            if (long.TryParse(token.Value, NumberStyles.None, CultureInfo.InvariantCulture, out var id) && id > 0)
            {
                ids.Add(id);
            }
            else
            {
                result.AddError($"id: an item id is a positive whole number (was '{token.Value}').");
            }
        }

        return [.. ids];
    }

    private static string Path(string queue) => $"/queues/{Uri.EscapeDataString(queue)}/{Name}";

    private static void AddParameter(List<string> parameters, string name, string? value)
    {
        if (value is not null)
        {
            parameters.Add($"{name}={Uri.EscapeDataString(value)}");
        }
    }

    private static string Selection(long[] ids, string? since, string? until)
    {
        if (ids.Length > 0)
        {
            return new JsonObject { ["ids"] = new JsonArray([.. ids.Select(id => JsonValue.Create(id))]) }.ToJsonString();
        }

        var body = new JsonObject { ["all"] = true };
        if (since is not null)
        {
            body["since"] = since;
        }

        if (until is not null)
        {
            body["until"] = until;
        }

        return body.ToJsonString();
    }

    private static int Read(ParseResult result, string target, Action<JsonElement> render) =>
        Output.Answer(CommonOptions.Client(result).Get(target), result.GetValue(CommonOptions.Json), render);

    private static int Apply(ParseResult result, string method, string target, string body) =>
        Output.Answer(CommonOptions.Client(result).Send(method, target, body), result.GetValue(CommonOptions.Json), static doc =>
        {
            var done = doc.Text("operation") == "requeue" ? "requeued" : "purged";
            Output.Terminal.MarkupLine(
                $"[bold]{Markup.Escape(doc.Text("queue"))}[/]: {doc.Long("count")} dead letter{(doc.Long("count") == 1 ? "" : "s")} {done} [grey]({Markup.Escape(doc.Text("selection"))})[/]");
        });

    private static IRenderable ListView(JsonElement page, string queue)
    {
        var items = page.Items("items").ToList();
        if (items.Count == 0)
        {
            return new Markup($"[grey]No dead letters in work queue '{Markup.Escape(page.Text("queue"))}' (in this window).[/]{Environment.NewLine}");
        }

        var table = new Table().Border(TableBorder.Simple);
        table.AddColumn(new TableColumn("ID").RightAligned().NoWrap());
        table.AddColumn(new TableColumn("ATTEMPTS").RightAligned());
        table.AddColumn(new TableColumn("DIED").NoWrap());
        table.AddColumn(new TableColumn("PRIORITY").RightAligned());
        table.AddColumn("KEY");
        table.AddColumn("LAST ERROR");
        foreach (var item in items)
        {
            table.AddRow(
                item.Text("id"),
                item.Text("attempts"),
                Time(item, "deadAt"),
                item.Text("priority"),
                Markup.Escape(item.Text("orderingKey")),
                Markup.Escape(FirstLine(item.Text("lastError"), 100)));
        }

        var cursor = page.Text("nextCursor");
        return new Rows(
            table,
            new Markup(cursor.Length == 0
                ? $"[grey]{items.Count} shown; no more.[/]"
                : $"[grey]{items.Count} shown; more with:[/] bw dead-letters list {Markup.Escape(queue)} --cursor {Markup.Escape(cursor)}"));
    }

    private static Rows LetterView(JsonElement letter)
    {
        var grid = new Grid().AddColumn(new GridColumn().NoWrap()).AddColumn();
        foreach (var (label, value) in (ReadOnlySpan<(string, string)>)[
            ("queue", letter.Text("queue")),
            ("id", letter.Text("id")),
            ("attempts", letter.Text("attempts")),
            ("enqueued", Time(letter, "enqueuedAt")),
            ("died", Time(letter, "deadAt")),
            ("priority", letter.Text("priority")),
            ("ordering key", letter.Text("orderingKey")),
            ("traceparent", letter.Text("traceParent")),
            ("payload", $"{letter.Text("payloadLength")} characters{(letter.Flag("payloadTruncated") ? ", cut: its beginning as text below" : "")}"),
        ])
        {
            grid.AddRow(new Markup($"[grey]{label}[/]"), new Text(value));
        }

        var payload = letter.Flag("payloadTruncated")
            ? letter.Text("payloadText")
            : letter.Get("payload") is { ValueKind: not JsonValueKind.Undefined } p ? JsonSerializer.Serialize(p, PrettyJson.Default.JsonElement) : "";
        return new Rows(
            grid,
            new Markup("[bold]last error[/]"),
            new Text(letter.Text("lastError")),
            new Markup("[bold]payload[/]"),
            new Text(payload));
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

[System.Text.Json.Serialization.JsonSourceGenerationOptions(WriteIndented = true)]
[System.Text.Json.Serialization.JsonSerializable(typeof(JsonElement))]
internal sealed partial class PrettyJson : System.Text.Json.Serialization.JsonSerializerContext;
