using System.CommandLine;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// The write verbs: resize and set. The app validates and logs each change exactly as it does for the HTTP console
/// (the change log names the tool's user and process id); the tool only builds the request.
/// </summary>
internal static class WriteCommands
{
    private static readonly string[] s_settings = ["workers", "queueCapacity", "rejectionPolicy", "waitTimeout", "slowItemThreshold", "queueWaitThreshold", "adaptiveMode", "adaptiveMinWorkers", "adaptiveMaxWorkers"];

    public static Command Resize()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var workers = new Argument<int>("workers") { Description = "The worker count to converge to (1 up to the executor's MaxWorkerCount).", CustomParser = NumberParsers.RequiredWholeNumber };
        var pinFor = new Option<string?>("--pin-for") { Description = "While the executor's adaptive mode is on, how long the count stays pinned: hh:mm:ss, or infinite (the default: until 'bw unpin')." };
        var command = new Command("resize", "Set an executor's worker count now: 'bw resize payments 16'. Running items are never interrupted. While the adaptive mode is on, the count is pinned (until 'bw unpin', or for --pin-for).") { name, workers, pinFor };
        command.SetAction(result =>
        {
            var body = new JsonObject { ["workers"] = result.GetValue(workers) };
            Add(body, "pinFor", result.GetValue(pinFor));
            return Change(result, "PUT", $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}/workers", body);
        });
        return command;
    }

    public static Command Unpin()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var command = new Command("unpin", "End the pin a resize put on an adaptive executor's worker count: 'bw unpin payments'. The adaptive mode resumes from the count in force.") { name };
        command.SetAction(result => Change(result, "PATCH", $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}", new JsonObject { ["pinned"] = false }));
        return command;
    }

    public static Command Set()
    {
        var name = new Argument<string>("executor") { Description = "The executor's name (see 'bw list')." };
        var workers = new Option<int?>("--workers") { Description = "Worker count.", CustomParser = NumberParsers.WholeNumber };
        var capacity = new Option<int?>("--queue-capacity") { Description = "How many items may wait in the queue.", CustomParser = NumberParsers.WholeNumber };
        var policy = new Option<string?>("--policy") { Description = "Rejection policy when the queue is full: Abort, CallerRuns, Discard, DiscardOldest or Wait." };
        var waitTimeout = new Option<string?>("--wait-timeout") { Description = "How long the Wait policy waits for room: hh:mm:ss, or infinite." };
        var slow = new Option<string?>("--slow-item-threshold") { Description = "An item running longer is reported: hh:mm:ss, or infinite (off)." };
        var queueWait = new Option<string?>("--queue-wait-threshold") { Description = "An item waiting longer is reported: hh:mm:ss, or infinite (off)." };
        var adaptive = new Option<string?>("--adaptive") { Description = "Adaptive workers: On (the executor finds its worker count), Advisory (only records what it would do) or Off." };
        var adaptiveMin = new Option<int?>("--adaptive-min") { Description = "The fewest workers the adaptive mode runs.", CustomParser = NumberParsers.WholeNumber };
        var adaptiveMax = new Option<int?>("--adaptive-max") { Description = "The most workers the adaptive mode runs (at most MaxWorkerCount).", CustomParser = NumberParsers.WholeNumber };
        var command = new Command("set", "Change any of an executor's settings in one all-or-nothing step: 'bw set payments --queue-capacity 500 --policy Wait --wait-timeout 00:00:02'.")
        {
            name, workers, capacity, policy, waitTimeout, slow, queueWait, adaptive, adaptiveMin, adaptiveMax,
        };
        command.SetAction(result =>
        {
            var body = new JsonObject();
            Add(body, "workers", result.GetValue(workers));
            Add(body, "queueCapacity", result.GetValue(capacity));
            Add(body, "rejectionPolicy", result.GetValue(policy));
            Add(body, "waitTimeout", result.GetValue(waitTimeout));
            Add(body, "slowItemThreshold", result.GetValue(slow));
            Add(body, "queueWaitThreshold", result.GetValue(queueWait));
            Add(body, "adaptiveMode", result.GetValue(adaptive));
            Add(body, "adaptiveMinWorkers", result.GetValue(adaptiveMin));
            Add(body, "adaptiveMaxWorkers", result.GetValue(adaptiveMax));
            if (body.Count == 0)
            {
                Output.Error("set needs at least one setting: --workers, --queue-capacity, --policy, --wait-timeout, --slow-item-threshold, --queue-wait-threshold, --adaptive, --adaptive-min or --adaptive-max.");
                return ExitCodes.Usage;
            }

            return Change(result, "PATCH", $"/executors/{Uri.EscapeDataString(result.GetValue(name)!)}", body);
        });
        return command;
    }

    private static void Add<T>(JsonObject body, string field, T? value)
    {
        if (value is not null)
        {
            body[field] = JsonValue.Create(value);
        }
    }

    private static int Change(ParseResult result, string method, string target, JsonObject body) =>
        ChangeAnswer.Send(
            result,
            method,
            target,
            body,
            s_settings,
            static (doc, section, field) => doc.Text(section, field),
            static doc => doc.Text("name"),
            static doc => $"workers now: busy {doc.Long("workers", "busy")}, live {doc.Long("workers", "live")}, target {doc.Long("workers", "target")}, max {doc.Long("workers", "max")}");
}
