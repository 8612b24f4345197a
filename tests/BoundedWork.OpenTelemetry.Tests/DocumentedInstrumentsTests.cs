using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Text;
using System.Text.Json.Serialization;
using System.Text.RegularExpressions;
using BoundedWork.AspNetCore;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using OpenTelemetry.Metrics;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary>
/// Every instrument of the "Instruments" table in docs/opentelemetry.md is exported through
/// <c>AddBoundedWorkInstrumentation()</c> with the documented meter, unit and tag keys, driven by real components.
/// </summary>
[Collection(TelemetryCollection.Name)]
public sealed partial class DocumentedInstrumentsTests(PostgresFixture postgres)
{
    private static readonly TimeSpan s_patience = TimeSpan.FromMinutes(2);

    /// <summary>
    /// Instruments no test here can make record within reason; OpenTelemetry exports no metric without a point, so these
    /// are checked for meter and unit as published (a <see cref="MeterListener"/>), not for tags.
    /// </summary>
    private static readonly Dictionary<string, string> s_notRecorded = new(StringComparer.Ordinal)
    {
        ["boundedwork.storage.released"] = "needs a claimed delivery handed back unrun while the node stops: a race with the handler",
        ["boundedwork.storage.cancelled"] = "needs a stored item cancelled through the node; no public cancel call on the queue interface",
        ["boundedwork.storage.leases_expired"] = "needs another node's claim to outlive its lease: a second process and a lease to run out",
        ["boundedwork.storage.cluster.limited_claims"] = "needs a cluster limit that binds: a queue_settings row and more ready items than it lets run",
    };

    [Fact]
    public async Task EveryDocumentedInstrument_IsExportedWithItsUnitAndTags()
    {
        var documented = ReadDocumentedInstruments();
        Assert.NotEmpty(documented);
        var recorded = documented.Where(row => !s_notRecorded.ContainsKey(row.Name)).Select(row => row.Name).ToHashSet(StringComparer.Ordinal);

        // A listener beside OpenTelemetry: what was published (meter, unit) and a gate per recorded instrument.
        var published = new ConcurrentDictionary<string, (string Meter, string? Unit)>(StringComparer.Ordinal);
        var gates = recorded.ToDictionary(name => name, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously), StringComparer.Ordinal);
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (BoundedWorkInstrumentation.MeterNames.Contains(instrument.Meter.Name))
            {
                published[instrument.Name] = (instrument.Meter.Name, instrument.Unit);
                l.EnableMeasurementEvents(instrument);
            }
        };
        void Seen(Instrument instrument)
        {
            if (gates.TryGetValue(instrument.Name, out var gate))
            {
                gate.TrySetResult();
            }
        }

        listener.SetMeasurementEventCallback<long>((instrument, _, _, _) => Seen(instrument));
        listener.SetMeasurementEventCallback<int>((instrument, _, _, _) => Seen(instrument));
        listener.SetMeasurementEventCallback<double>((instrument, _, _, _) => Seen(instrument));
        listener.Start();

        var exported = new List<MetricSnapshot>();
        var schema = PostgresFixture.NewSchema();
        await using var app = await StartAppAsync(schema, exported);
        using var client = new HttpClient { BaseAddress = app.Address };

        var slow = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "documented-probe",
            WorkerCount = 1,
            MaxWorkerCount = 2,
            QueueCapacity = 1,
            RejectionPolicy = RejectionPolicy.Abort,
            SlowItemThreshold = TimeSpan.FromMilliseconds(1),
            OnSlowItem = _ => slow.TrySetResult(),
            AdaptiveMode = AdaptiveMode.Advisory, // a pin is a decision only with the adaptive mode on
            FairShare = new FairShareSettings(), // the per-tenant instruments: one tenant's item below
        });
        await DriveExecutorAsync(executor, slow.Task);

        // Rate limit: one permit a second, burst 1; the second item is refused a permit and waits for the next.
        await using (var limited = new BoundedExecutor(new BoundedExecutorOptions { Name = "documented-limited", WorkerCount = 1, PermitsPerSecond = 1, PermitBurst = 1 }))
        {
            var first = limited.RunAsync(() => { });
            var second = limited.RunAsync(() => { });
            await Task.WhenAll(first, second).WaitAsync(s_patience);
            await gates["boundedwork.ratelimit.wait.duration"].Task.WaitAsync(s_patience);
        }

        // A typed work queue whose attempt's scope fails to dispose.
        await app.Services.GetRequiredService<IWorkQueue<ScopedJob>>().EnqueueAsync(new ScopedJob(1));
        await app.Services.GetRequiredService<IWorkQueue<UnconstructableJob>>().EnqueueAsync(new UnconstructableJob(1)); // handler_unavailable
        await app.Services.GetRequiredService<IWorkQueue<SnoozedJob>>().EnqueueAsync(new SnoozedJob(1)); // snoozed once, then runs

        // The durable queue: one item completes, one fails, is retried once and becomes a dead letter.
        var durable = app.Services.GetRequiredService<IPostgreSqlWorkQueue<DurableJob>>();
        await durable.EnqueueWithIdAsync(new DurableJob(Fail: false));
        var failing = await durable.EnqueueWithIdAsync(new DurableJob(Fail: true));
        await durable.EnqueueWithIdAsync(new DurableJob(Fail: false, Snooze: true)); // snoozed once, then completes
        await Task.WhenAll(gates["boundedwork.storage.completed"].Task, gates["boundedwork.storage.dead_lettered"].Task, gates["boundedwork.storage.snoozed"].Task).WaitAsync(s_patience);

        // The console: a change applied, a change refused, a dead letter requeued.
        await SendAsync(client, HttpMethod.Patch, "/bounded-work/executors/documented-admin", """{"workers": 2}""", expectSuccess: true);
        await SendAsync(client, HttpMethod.Patch, "/bounded-work/executors/documented-nobody", """{"workers": 2}""", expectSuccess: false);
        await SendAsync(client, HttpMethod.Post, $"/bounded-work/queues/{DurableQueue}/dead-letters/{failing}/requeue", json: "{}", expectSuccess: true);

        // Every recorded instrument has recorded (or the patience ran out: the message below names what did not).
        listener.RecordObservableInstruments();
        await Task.WhenAny(Task.WhenAll(gates.Values.Select(gate => gate.Task)), Task.Delay(s_patience));
        Assert.True(app.Services.GetRequiredService<MeterProvider>().ForceFlush(), "ForceFlush failed.");

        var problems = new List<string>();
        foreach (var row in documented)
        {
            if (s_notRecorded.ContainsKey(row.Name))
            {
                if (!published.TryGetValue(row.Name, out var instrument))
                {
                    problems.Add($"{row.Name}: not published");
                }
                else if (instrument.Meter != row.Meter || instrument.Unit != row.Unit)
                {
                    problems.Add($"{row.Name}: published on {instrument.Meter} in '{instrument.Unit}', documented on {row.Meter} in '{row.Unit}'");
                }

                continue;
            }

            var snapshots = exported.Where(metric => metric.Name == row.Name).ToList();
            if (snapshots.Count == 0)
            {
                problems.Add($"{row.Name}: not exported{(gates[row.Name].Task.IsCompleted ? "" : " (nothing recorded)")}");
                continue;
            }

            var metric = snapshots[^1];
            if (metric.MeterName != row.Meter)
            {
                problems.Add($"{row.Name}: meter {metric.MeterName}, documented {row.Meter}");
            }

            if (metric.Unit != row.Unit)
            {
                problems.Add($"{row.Name}: unit '{metric.Unit}', documented '{row.Unit}'");
            }

            var keys = new HashSet<string>(StringComparer.Ordinal);
            foreach (var point in snapshots.SelectMany(snapshot => snapshot.MetricPoints))
            {
                foreach (var tag in point.Tags)
                {
                    keys.Add(tag.Key);
                }
            }

            var absent = row.Tags.Where(tag => !keys.Contains(tag)).ToList();
            if (absent.Count > 0)
            {
                problems.Add($"{row.Name}: no tag {string.Join(", ", absent)} (exported: {string.Join(", ", keys.Order(StringComparer.Ordinal))})");
            }
        }

        Assert.True(problems.Count == 0, "Documented instruments not exported as documented:\n" + string.Join("\n", problems));
    }

    private static async Task DriveExecutorAsync(BoundedExecutor executor, Task slow)
    {
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        // Held past the slow-item threshold until the slow item is reported; meanwhile the queue fills and rejects.
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var held = executor.RunAsync(() =>
        {
            started.SetResult();
            release.Task.Wait();
        });
        await started.Task.WaitAsync(s_patience);
        var queued = executor.RunAsync(() => { });
        Assert.False(executor.TryExecute(() => { }));
        await slow.WaitAsync(s_patience);
        release.SetResult();
        await Task.WhenAll(held, queued).WaitAsync(s_patience);

        var failure = executor.RunAsync(() => throw new InvalidOperationException("documented failure"));
        await Assert.ThrowsAsync<InvalidOperationException>(() => failure.WaitAsync(s_patience));

        // A tenant's item: the per-tenant instruments have a point.
        await executor.ForTenant("documented-tenant").RunAsync(() => { }).WaitAsync(s_patience);

        // A pin is a worker-count decision.
        executor.Resize(2, TimeSpan.FromMinutes(10));
    }

    private static async Task SendAsync(HttpClient client, HttpMethod method, string path, string? json, bool expectSuccess)
    {
        using var request = new HttpRequestMessage(method, new Uri(path, UriKind.Relative));
        if (json is not null)
        {
            request.Content = new StringContent(json, Encoding.UTF8, "application/json");
        }

        request.Headers.Add("X-BoundedWork-Admin", "1");
        using var response = await client.SendAsync(request);
        Assert.True(response.IsSuccessStatusCode == expectSuccess, $"{method} {path}: {(int)response.StatusCode} {await response.Content.ReadAsStringAsync()}");
    }

    private const string DurableQueue = "documented-durable";

    private async Task<App> StartAppAsync(string schema, List<MetricSnapshot> exported)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddOpenTelemetry().WithMetrics(metrics => metrics
            .AddBoundedWorkInstrumentation()
            .AddInMemoryExporter(exported));
        builder.Services.AddBoundedExecutor("documented-admin", o => o.WorkerCount = 1);
        builder.Services.AddScoped<FailingDisposable>();
        builder.Services.AddWorkQueue<ScopedJob, ScopedJobHandler>("documented-scoped");
        builder.Services.AddWorkQueue<UnconstructableJob, UnconstructableJobHandler>("documented-unconstructable");
        builder.Services.AddWorkQueue<SnoozedJob, SnoozingJobHandler>("documented-snoozed");
        builder.Services
            .AddWorkQueue<DurableJob, DurableJobHandler>(DurableQueue, o =>
            {
                o.MaxRetryAttempts = 1;
                o.RetryDelay = TimeSpan.FromMilliseconds(1);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(1);
            })
            .UsePostgreSql(postgres.ConnectionString, DocumentedJson.Default.DurableJob, o =>
            {
                o.Schema = schema;
                o.PollInterval = TimeSpan.FromMilliseconds(50);
            });
        builder.Services.AddBoundedWorkAdmin();
        var app = builder.Build();
        app.MapBoundedWorkAdmin().AllowAnonymousAdmin();
        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.Single();
        return new App(app, new Uri(address));
    }

    /// <summary>The rows of the "Instruments" table of docs/opentelemetry.md, one per instrument.</summary>
    private static List<DocumentedInstrument> ReadDocumentedInstruments()
    {
        var directory = new DirectoryInfo(AppContext.BaseDirectory);
        while (directory is not null && !File.Exists(Path.Combine(directory.FullName, "docs", "opentelemetry.md")))
        {
            directory = directory.Parent;
        }

        Assert.NotNull(directory);
        var lines = File.ReadAllLines(Path.Combine(directory.FullName, "docs", "opentelemetry.md"));
        var start = Array.IndexOf(lines, "### Instruments");
        Assert.True(start >= 0, "docs/opentelemetry.md has no '### Instruments' section.");
        var rows = new List<DocumentedInstrument>();
        foreach (var line in lines.Skip(start + 1).SkipWhile(line => !line.StartsWith('|')).TakeWhile(line => line.StartsWith('|')).Skip(2))
        {
            var cells = line.Trim('|').Split('|').Select(cell => cell.Trim()).ToArray();
            Assert.True(cells.Length == 4, "Not a row of four cells: " + line);
            var names = Code(cells[0]);
            var meter = Assert.Single(Code(cells[1]));
            var unit = Assert.Single(Code(cells[2]));
            var tags = Code(cells[3]);
            var first = names[0];
            foreach (var name in names)
            {
                // `.completed` after `boundedwork.storage.claimed` is `boundedwork.storage.completed`.
                var full = name.StartsWith('.') ? first[..first.LastIndexOf('.')] + name : name;
                rows.Add(new DocumentedInstrument(full, meter, unit, tags));
            }
        }

        return rows;
    }

    private static List<string> Code(string cell) => CodeSpan().Matches(cell).Select(match => match.Groups[1].Value).ToList();

    [GeneratedRegex("`([^`]+)`")]
    private static partial Regex CodeSpan();

    private sealed record DocumentedInstrument(string Name, string Meter, string Unit, IReadOnlyList<string> Tags);

    private sealed class App(WebApplication app, Uri address) : IAsyncDisposable
    {
        public Uri Address { get; } = address;

        public IServiceProvider Services => app.Services;

        public async ValueTask DisposeAsync()
        {
            await app.StopAsync();
            await app.DisposeAsync();
        }
    }
}

public sealed record ScopedJob(int Id);

public sealed record DurableJob(bool Fail, bool Snooze = false);

public sealed record UnconstructableJob(int Id);

public sealed record SnoozedJob(int Id);

/// <summary>Snoozes the first item it sees for a millisecond (a snooze is counted), then handles every item.</summary>
internal sealed class SnoozingJobHandler(WorkItemContext context) : IWorkHandler<SnoozedJob>
{
    private static int s_snoozed;

    public ValueTask HandleAsync(SnoozedJob item, CancellationToken cancellationToken)
    {
        if (Interlocked.Exchange(ref s_snoozed, 1) == 0)
        {
            context.Snooze(TimeSpan.FromMilliseconds(1));
        }

        return ValueTask.CompletedTask;
    }
}

/// <summary>A service nothing registers, so the handler that needs it cannot be constructed (<c>handler_unavailable</c>).</summary>
internal sealed class UnregisteredService;

internal sealed class UnconstructableJobHandler(UnregisteredService service) : IWorkHandler<UnconstructableJob>
{
    public ValueTask HandleAsync(UnconstructableJob item, CancellationToken cancellationToken)
    {
        GC.KeepAlive(service);
        return ValueTask.CompletedTask;
    }
}

[JsonSerializable(typeof(DurableJob))]
internal sealed partial class DocumentedJson : JsonSerializerContext;

/// <summary>A scoped service whose disposal throws, so every attempt that uses it counts a scope dispose failure.</summary>
internal sealed class FailingDisposable : IDisposable
{
    public void Dispose() => throw new InvalidOperationException("documented dispose failure");
}

internal sealed class ScopedJobHandler(FailingDisposable scoped) : IWorkHandler<ScopedJob>
{
    public ValueTask HandleAsync(ScopedJob item, CancellationToken cancellationToken)
    {
        GC.KeepAlive(scoped);
        return ValueTask.CompletedTask;
    }
}

internal sealed class DurableJobHandler(WorkItemContext context) : IWorkHandler<DurableJob>
{
    private static readonly ConcurrentDictionary<long, bool> s_snoozed = new();

    public ValueTask HandleAsync(DurableJob item, CancellationToken cancellationToken)
    {
        if (item.Snooze && s_snoozed.TryAdd(context.ItemId, true))
        {
            context.Snooze(TimeSpan.FromMilliseconds(1)); // its first delivery only
        }

        return item.Fail ? throw new InvalidOperationException("documented durable failure") : ValueTask.CompletedTask;
    }
}
