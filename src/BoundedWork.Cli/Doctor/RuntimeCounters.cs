using System.Diagnostics.Tracing;
using System.Globalization;
using BoundedWork.Diagnostics.Internal;
using Microsoft.Diagnostics.NETCore.Client;
using Microsoft.Diagnostics.Tracing;

namespace BoundedWork.Cli.Doctor;

/// <summary>
/// Reads a process's counters over EventPipe, the way <c>dotnet-counters</c> does: the runtime's <c>System.Runtime</c>
/// EventCounters (ThreadPool threads, queue length, completed items, CPU) and the <c>BoundedWork</c> meter's
/// instruments (queue length, workers, busy workers per executor) through <c>System.Diagnostics.Metrics</c>. The
/// diagnostics port is served by the runtime's native thread, so this works while the managed pool is starved, and
/// needs no change to the app.
/// </summary>
internal static class RuntimeCounters
{
    public const string PoolThreads = CounterNames.PoolThreads;
    public const string PoolQueue = CounterNames.PoolQueue;
    public const string PoolCompleted = CounterNames.PoolCompleted;
    public const string Cpu = CounterNames.Cpu;

    private const string ExecutorTag = "boundedwork.executor=";

    /// <summary>The diagnostic events of ASP.NET Core MVC that say which action a thread begins and ends (the event header carries the thread).</summary>
    private const string ActionSpecs =
        "Microsoft.AspNetCore/Microsoft.AspNetCore.Mvc.BeforeAction:-Action=ActionDescriptor.DisplayName;Route=ActionDescriptor.AttributeRouteInfo.Template\r\n" +
        "Microsoft.AspNetCore/Microsoft.AspNetCore.Mvc.AfterAction:-Action=ActionDescriptor.DisplayName";

    /// <summary>
    /// Streams samples to <paramref name="onSample"/> until <paramref name="duration"/> passes or the token is cancelled;
    /// with <paramref name="onAction"/>, also the MVC action each OS thread begins (its label) or ends (null), from
    /// ASP.NET Core's diagnostic events through the runtime's DiagnosticSource event source.
    /// </summary>
    public static async Task CollectAsync(int processId, TimeSpan duration, Action<CounterSample> onSample, CancellationToken cancellationToken, Action<int, string?>? onAction = null)
    {
        var sessionId = Guid.NewGuid().ToString();
        var providers = new[]
        {
            new EventPipeProvider("System.Runtime", EventLevel.Informational, 0, new Dictionary<string, string> { ["EventCounterIntervalSec"] = "1" }),
            new EventPipeProvider("System.Diagnostics.Metrics", EventLevel.Informational, 0x2, new Dictionary<string, string>
            {
                ["SessionId"] = sessionId,
                ["Metrics"] = "BoundedWork",
                ["RefreshInterval"] = "1",
                ["MaxTimeSeries"] = "1000",
                ["MaxHistograms"] = "10",
                ["ClientId"] = Guid.NewGuid().ToString(),
            }),
        };
        if (onAction is not null)
        {
            providers = [.. providers, new EventPipeProvider("Microsoft-Diagnostics-DiagnosticSource", EventLevel.Verbose, 0x2, new Dictionary<string, string> { ["FilterAndPayloadSpecs"] = ActionSpecs })];
        }

        using var session = await Attach.StartAsync(processId, providers, requestRundown: false, cancellationToken);
        using var source = new EventPipeEventSource(session.EventStream);
        source.Dynamic.All += e =>
        {
            if (Read(e, sessionId) is { } sample)
            {
                onSample(sample);
            }
            else if (onAction is not null && e.ProviderName == "Microsoft-Diagnostics-DiagnosticSource" && ReadAction(e) is { } action)
            {
                onAction(e.ThreadID, action.Label);
            }
        };

        var processing = Task.Factory.StartNew(source.Process, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        try
        {
            await Task.WhenAny(processing, Task.Delay(duration, cancellationToken));
        }
        catch (OperationCanceledException)
        {
            // Stop below, as after the duration.
        }

        await Attach.StopAsync(session);
        await Task.WhenAny(processing, Task.Delay(TimeSpan.FromSeconds(5), CancellationToken.None));
    }

    /// <summary>An MVC action's begin (its label) or end (a null label), or null for another event.</summary>
    private static (string? Label, bool Known)? ReadAction(TraceEvent e)
    {
        if (e.EventName != "Event" || e.PayloadByName("EventName") is not string name)
        {
            return null;
        }

        string? display = null, route = null;
        if (e.PayloadByName("Arguments") is System.Collections.IEnumerable arguments)
        {
            foreach (var argument in arguments)
            {
                if (argument is IDictionary<string, object> pair && pair.TryGetValue("Key", out var key) && pair.TryGetValue("Value", out var value))
                {
                    if (Equals(key, "Action"))
                    {
                        display = value as string;
                    }
                    else if (Equals(key, "Route"))
                    {
                        route = value as string;
                    }
                }
            }
        }

        return name switch
        {
            "Microsoft.AspNetCore.Mvc.BeforeAction" when !string.IsNullOrEmpty(display) => (Diagnosis.ActionLabel(display, route), true),
            "Microsoft.AspNetCore.Mvc.AfterAction" => (null, true),
            _ => null,
        };
    }

    private static CounterSample? Read(TraceEvent e, string sessionId)
    {
        if (e.ProviderName == "System.Runtime" && e.EventName == "EventCounters"
            && e.PayloadValue(0) is IDictionary<string, object> outer && outer.TryGetValue("Payload", out var inner) && inner is IDictionary<string, object> payload)
        {
            var name = payload["Name"].ToString()!;
            var value = payload.TryGetValue("CounterType", out var type) && Equals(type, "Sum")
                ? Convert.ToDouble(payload["Increment"], CultureInfo.InvariantCulture)
                : Convert.ToDouble(payload["Mean"], CultureInfo.InvariantCulture);
            return new CounterSample(e.TimeStamp, name, null, value);
        }

        if (e.ProviderName == "System.Diagnostics.Metrics" && e.EventName is "UpDownCounterRateValuePublished" or "GaugeValuePublished" or "CounterRateValuePublished"
            && Equals(e.PayloadValue(0), sessionId))
        {
            var instrument = (string)e.PayloadValue(3);
            var tags = (string)e.PayloadValue(5);
            var valueText = e.EventName == "GaugeValuePublished" ? (string)e.PayloadValue(6)
                : e.EventName == "CounterRateValuePublished" ? (string)e.PayloadValue(6) // the rate: items per interval
                : e.Version >= 1 ? (string)e.PayloadValue(7) : (string)e.PayloadValue(6);
            var executor = tags.Split(',').Select(t => t.Trim()).FirstOrDefault(t => t.StartsWith(ExecutorTag, StringComparison.Ordinal))?[ExecutorTag.Length..];
            return double.TryParse(valueText, NumberStyles.Float, CultureInfo.InvariantCulture, out var value)
                ? new CounterSample(e.TimeStamp, instrument, executor, value)
                : null;
        }

        return null;
    }
}

/// <summary>Attaching to the runtime's diagnostics port, with errors a person can act on.</summary>
internal static class Attach
{
    public static async Task<EventPipeSession> StartAsync(int processId, IEnumerable<EventPipeProvider> providers, bool requestRundown, CancellationToken cancellationToken)
    {
        if (!Targets.Target.IsRunning(processId))
        {
            throw ToolException.Unreachable($"No process {processId} is running.");
        }

        try
        {
            var client = new DiagnosticsClient(processId);
            return await client.StartEventPipeSessionAsync(providers, requestRundown, 256, cancellationToken);
        }
        catch (Exception e) when (e is ServerNotAvailableException or UnsupportedCommandException or ServerErrorException or UnauthorizedAccessException or IOException or TimeoutException)
        {
            throw ToolException.Unreachable(
                $"Cannot attach to process {processId} through the runtime's diagnostics port: {e.Message} " +
                "It must be a .NET process run by this user (or run bw as root), with diagnostics enabled (DOTNET_EnableDiagnostics not 0), and, in a container, bw must run in the same container with the same TMPDIR.");
        }
    }

    public static async Task StopAsync(EventPipeSession session)
    {
        try
        {
            using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            await session.StopAsync(stop.Token);
        }
        catch (Exception e) when (e is ServerNotAvailableException or OperationCanceledException or IOException or EndOfStreamException)
        {
            // The process went away or the session ended on its own: what was read stands.
        }
    }
}
