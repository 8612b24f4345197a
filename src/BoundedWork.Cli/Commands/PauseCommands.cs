using System.CommandLine;
using System.Globalization;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw pause</c> and <c>bw resume</c>: an executor's workers stop starting items (its queue keeps accepting up to its
/// capacity), and start again. The app validates and audits each as it does a settings change.
/// </summary>
internal static class PauseCommands
{
    public static Command Pause()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var reason = new Option<string>("--reason") { Description = "Why (required; shown in 'bw show', the health check and the app's log).", Required = true };
        var duration = new Option<string?>("--for") { Description = "How long, after which it resumes by itself: 90s, 10m, 2h, 1d, hh:mm:ss, or infinite (the default: until 'bw resume')." };
        var command = new Command("pause", "Pause an executor: its workers start no new item, running items finish, its queue keeps accepting up to its capacity: 'bw pause payments --reason \"provider outage\" --for 10m'.") { name, reason, duration };
        command.SetAction(result =>
        {
            var body = new JsonObject { ["reason"] = result.GetValue(reason) };
            if (result.GetValue(duration) is { } text)
            {
                if (ToConsoleDuration(text) is not { } value)
                {
                    Output.Error($"--for '{text}' is not a duration: use 90s, 10m, 2h, 1d, hh:mm:ss or infinite.");
                    return ExitCodes.Usage;
                }

                body["for"] = value;
            }

            return Send(result, $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}/pause", body);
        });
        return command;
    }

    public static Command Resume()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var command = new Command("resume", "End an executor's pause: its workers start the queued items again at once: 'bw resume payments'.") { name };
        command.SetAction(result => Send(result, $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}/resume", []));
        return command;
    }

    /// <summary>A duration as typed (<c>90s</c>, <c>10m</c>, <c>2h</c>, <c>1d</c>, <c>hh:mm:ss</c>, <c>infinite</c>) in the console's format; <see langword="null"/> if it is none of them.</summary>
    internal static string? ToConsoleDuration(string text)
    {
        if (string.Equals(text, "infinite", StringComparison.OrdinalIgnoreCase) || text.Contains(':', StringComparison.Ordinal))
        {
            return text; // the app checks the format and the range, and names the field
        }

        if (text.Length < 2 || !long.TryParse(text.AsSpan(0, text.Length - 1), NumberStyles.None, CultureInfo.InvariantCulture, out var n) || n > 100_000)
        {
            return null;
        }

        TimeSpan? value = char.ToLowerInvariant(text[^1]) switch
        {
            's' => TimeSpan.FromSeconds(n),
            'm' => TimeSpan.FromMinutes(n),
            'h' => TimeSpan.FromHours(n),
            'd' => TimeSpan.FromDays(n),
            _ => null,
        };
        return value?.ToString("c", CultureInfo.InvariantCulture);
    }

    private static int Send(ParseResult result, string target, JsonObject body)
    {
        var answer = CommonOptions.Client(result).Send("POST", target, body.ToJsonString());
        return Output.Answer(answer, result.GetValue(CommonOptions.Json), doc =>
        {
            var name = Markup.Escape(doc.Text("executor"));
            if (!doc.Flag("pause", "paused"))
            {
                Output.Terminal.MarkupLine(doc.Flag("changed") ? $"[bold]{name}[/]: resumed" : $"[bold]{name}[/]: not paused (unchanged)");
                return;
            }

            var until = doc.Text("pause", "until") is { Length: > 0 } end ? $"until {end}" : "until 'bw resume'";
            Output.Terminal.MarkupLine($"[bold]{name}[/]: [yellow]paused[/] {Markup.Escape(until)}: {Markup.Escape(doc.Text("pause", "reason"))}");
            Output.Terminal.MarkupLine("[grey]Its workers start no new item; running items finish; the queue keeps accepting up to its capacity.[/]");
        });
    }
}
