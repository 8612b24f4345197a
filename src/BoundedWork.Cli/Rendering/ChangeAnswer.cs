using System.CommandLine;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Commands;
using Spectre.Console;

namespace BoundedWork.Cli.Rendering;

/// <summary>
/// A change request sent and its answer printed, the same for every write verb (<c>bw resize</c>, <c>bw set</c>,
/// <c>bw cluster set</c>): a refusal as the problem it is; with <c>--json</c>, the answer itself; otherwise one line,
/// the changed thing's name and each field whose value changed (<c>field previous -> current</c>, or "unchanged"), and
/// a grey line the verb writes about the state after the change.
/// </summary>
internal static class ChangeAnswer
{
    /// <summary>Sends the change and prints its answer.</summary>
    /// <param name="result">The parsed command line (the target and <c>--json</c>).</param>
    /// <param name="method">The HTTP method of the change.</param>
    /// <param name="target">The console path the change goes to.</param>
    /// <param name="body">The change request.</param>
    /// <param name="fields">The fields of the answer's <c>previous</c> and <c>current</c> objects, in the order they are listed.</param>
    /// <param name="value">A field's value as printed: (answer, <c>previous</c> or <c>current</c>, field) to text.</param>
    /// <param name="name">The changed thing's name in the answer, as plain text.</param>
    /// <param name="after">The grey line, as markup.</param>
    /// <returns>The exit code: <see cref="ExitCodes.Ok"/>, or <see cref="ExitCodes.Refused"/> for a problem answer.</returns>
    public static int Send(
        ParseResult result,
        string method,
        string target,
        JsonObject body,
        IReadOnlyList<string> fields,
        Func<JsonElement, string, string, string> value,
        Func<JsonElement, string> name,
        Func<JsonElement, string> after)
    {
        var answer = CommonOptions.Client(result).Send(method, target, body.ToJsonString());
        return Output.Answer(answer, result.GetValue(CommonOptions.Json), doc =>
        {
            var changes = fields
                .Select(f => (Field: f, Previous: value(doc, "previous", f), Current: value(doc, "current", f)))
                .Where(f => f.Previous != f.Current)
                .Select(f => $"{f.Field} {Markup.Escape(f.Previous)} -> [bold]{Markup.Escape(f.Current)}[/]")
                .ToList();
            Output.Terminal.MarkupLine($"[bold]{Markup.Escape(name(doc))}[/]: {(changes.Count == 0 ? "unchanged (already so)" : string.Join(", ", changes))}");
            Output.Terminal.MarkupLine($"[grey]{after(doc)}[/]");
        });
    }
}
