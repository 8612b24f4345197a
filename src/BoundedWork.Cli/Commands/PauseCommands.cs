using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// <c>bw pause</c> and <c>bw resume</c>: an executor's workers stop starting items (its queue keeps accepting up to its
/// capacity), and start again; with <c>--fleet</c> (or <c>--key</c>), a durable queue stops being claimed on every node
/// (or only one ordering key's items), kept in its database. The app validates and audits each as it does a settings change.
/// </summary>
internal static class PauseCommands
{
    public static Command Pause()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var reason = new Option<string>("--reason") { Description = "Why (required; shown in 'bw show', the health check and the app's log).", Required = true };
        var duration = new Option<string?>("--for") { Description = "How long, after which it resumes by itself: 90s, 10m, 2h, 1d, hh:mm:ss, or infinite (the default: until 'bw resume')." };
        var fleet = FleetOption();
        var key = KeyOption("pause only the items of this ordering key, on every node; the rest flows");
        var command = new Command("pause", "Pause an executor: its workers start no new item, running items finish, its queue keeps accepting up to its capacity: 'bw pause payments --reason \"provider outage\" --for 10m'. With --fleet, a durable queue on every node: 'bw pause payments --fleet --reason \"provider outage\"'; with --key, one ordering key of it.") { name, reason, duration, fleet, key };
        command.SetAction(result =>
        {
            var body = new JsonObject { ["reason"] = result.GetValue(reason) };
            if (result.GetValue(key) is { } keyValue)
            {
                body["key"] = keyValue;
            }

            if (result.GetValue(duration) is { } text)
            {
                if (ToConsoleDuration(text) is not { } value)
                {
                    Output.Error($"--for '{text}' is not a duration: use 90s, 10m, 2h, 1d, hh:mm:ss or infinite.");
                    return ExitCodes.Usage;
                }

                body["for"] = value;
            }

            return Send(result, Target(result, name, fleet, key, "pause"), body);
        });
        return command;
    }

    public static Command Resume()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var fleet = FleetOption();
        var key = KeyOption("resume only this ordering key's pause");
        var command = new Command("resume", "End an executor's pause: its workers start the queued items again at once: 'bw resume payments'. With --fleet, a durable queue's fleet-wide pause; with --key, one ordering key's.") { name, fleet, key };
        command.SetAction(result =>
        {
            var body = new JsonObject();
            if (result.GetValue(key) is { } keyValue)
            {
                body["key"] = keyValue;
            }

            return Send(result, Target(result, name, fleet, key, "resume"), body);
        });
        return command;
    }

    private static Option<bool> FleetOption() => new("--fleet") { Description = "The durable queue of this name, on every node (its pause is kept in its database), instead of this app's executor." };

    private static Option<string?> KeyOption(string what) => new("--key") { Description = $"With a durable queue (implies --fleet): {what}." };

    private static string Target(ParseResult result, Argument<string> name, Option<bool> fleet, Option<string?> key, string action) =>
        result.GetValue(fleet) || result.GetValue(key) is not null
            ? $"/queues/{Uri.EscapeDataString(result.GetValue(name)!)}/{action}"
            : $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}/{action}";

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
            if (doc.Text("queue") is { Length: > 0 } queue)
            {
                RenderFleet(doc, Markup.Escape(queue), target.EndsWith("/pause", StringComparison.Ordinal));
                return;
            }

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

    /// <summary>A durable queue's pause or resume: what it did.</summary>
    private static void RenderFleet(JsonElement doc, string queue, bool pausing)
    {
        var target = doc.Text("pause", "key") is { Length: > 0 } key ? $"{queue} key '{Markup.Escape(key)}'" : queue;
        var reason = Markup.Escape(doc.Text("pause", "reason"));
        if (pausing)
        {
            var until = doc.Text("pause", "until") is { Length: > 0 } end ? $"until {end}" : "until 'bw resume --fleet'";
            Output.Terminal.MarkupLine($"[bold]{target}[/]: [yellow]paused fleet-wide[/] {Markup.Escape(until)}: {reason}");
            Output.Terminal.MarkupLine("[grey]No node claims its items now; running items finish; a node started meanwhile stays paused.[/]");
        }
        else
        {
            Output.Terminal.MarkupLine(doc.Flag("changed") ? $"[bold]{target}[/]: resumed fleet-wide (was paused: {reason})" : $"[bold]{queue}[/]: not paused fleet-wide (unchanged)");
        }
    }
}
