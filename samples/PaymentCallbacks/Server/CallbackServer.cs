using System.Diagnostics;
using System.Net;
using BoundedWork;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Mvc;
using Microsoft.Extensions.Options;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Server;

/// <summary>
/// The payment-callback service: one request handler, three ways to run its blocking side effect.
/// <list type="bullet">
/// <item><c>POST /callbacks/naive</c>: <c>Task.Run</c> — the side effect runs on the shared ThreadPool.</item>
/// <item><c>POST /callbacks/naive-sync</c>: inline on the request's own (ThreadPool) thread.</item>
/// <item><c>POST /callbacks/bounded</c>: on the <c>payments</c> executor's dedicated workers, or a fast 503.</item>
/// </list>
/// </summary>
internal static partial class CallbackServer
{
    /// <summary>The line the server prints once it listens; parents read the address from it.</summary>
    public const string ListeningPrefix = "LISTENING ";

    /// <summary>The line the server prints after shutdown with the final ledger (JSON stats).</summary>
    public const string LedgerPrefix = "LEDGER ";

    private static readonly long s_started = Stopwatch.GetTimestamp();

    /// <summary>Builds and runs the server until it is stopped (Ctrl-C, SIGTERM, or stdin closing if asked).</summary>
    /// <param name="args">Configuration arguments (<c>--port 0</c>, <c>--SideEffect:MaxDelayMs=50</c>, ...).</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> RunAsync(string[] args)
    {
        await using var app = Build(args);
        try
        {
            await app.StartAsync().ConfigureAwait(false);
        }
        catch (OptionsValidationException e)
        {
            foreach (var failure in e.Failures)
            {
                await Console.Error.WriteLineAsync(failure).ConfigureAwait(false);
            }

            return 2;
        }

        Console.WriteLine(ListeningPrefix + GetAddress(app));
        if (app.Configuration.GetValue("stop-on-stdin-eof", false))
        {
            StopWhenStdinCloses(app.Lifetime);
        }

        await app.WaitForShutdownAsync().ConfigureAwait(false);
        var ledger = ReadStats(app.Services, collect: false);
        Console.WriteLine(LedgerPrefix + System.Text.Json.JsonSerializer.Serialize(ledger, StatsJson.Default.ServerStats));
        return 0;
    }

    /// <summary>Gets the address the started server listens on.</summary>
    /// <param name="app">The started app.</param>
    /// <returns>The address, such as <c>http://127.0.0.1:5080</c>.</returns>
    public static string GetAddress(WebApplication app) =>
        app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();

    /// <summary>Builds the server with its endpoints mapped, not started.</summary>
    /// <param name="args">Configuration arguments.</param>
    /// <param name="configureServices">Changes to the services after the sample's own (tests replace the dependency).</param>
    /// <returns>The app.</returns>
    public static WebApplication Build(string[] args, Action<IServiceCollection>? configureServices = null)
    {
        var builder = WebApplication.CreateBuilder(args);
        var port = builder.Configuration.GetValue("port", 5080);

        // Loopback only, whatever ASPNETCORE_URLS or --urls say: this sample has an anonymous admin console.
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, port));
        builder.Services.Configure<HostOptions>(o =>
            o.ShutdownTimeout = TimeSpan.FromSeconds(builder.Configuration.GetValue("ShutdownTimeoutSeconds", 5)));

        builder.Services.AddOptions<SideEffectOptions>().BindConfiguration(SideEffectOptions.Section).ValidateOnStart();
        builder.Services.AddSingleton<IValidateOptions<SideEffectOptions>, SideEffectOptionsValidator>();
        builder.Services.AddOptions<DownstreamOptions>().BindConfiguration(DownstreamOptions.Section).ValidateOnStart();
        builder.Services.AddSingleton<IValidateOptions<DownstreamOptions>, DownstreamOptionsValidator>();
        builder.Services.AddSingleton<LimitedCapacityDependency>();

        // The plain slow dependency, or (--Downstream:Capacity=12) one of limited capacity: K connections, the knee
        // the adaptive-workers benchmark's executor does not know.
        builder.Services.AddSingleton<IPaymentDependency>(sp =>
            sp.GetRequiredService<IOptions<DownstreamOptions>>().Value.Capacity > 0
                ? sp.GetRequiredService<LimitedCapacityDependency>()
                : ActivatorUtilities.CreateInstance<SlowDependency>(sp));
        builder.Services.AddSingleton<CallbackCounters>();
        builder.Services.AddSingleton<HandedBackCallbacks>();
        builder.Services.AddSingleton<IAbandonedWorkHandler>(sp => sp.GetRequiredService<HandedBackCallbacks>());

        // The bounded home of the side effects: a few dedicated threads and a realistic queue. appsettings.json or
        // the command line (--BoundedWork:Executors:payments:WorkerCount=2) override these defaults.
        builder.Services.AddBoundedExecutor(IncidentReplay.ExecutorName, o =>
        {
            o.WorkerCount = 8;
            o.MaxWorkerCount = 64;
            o.QueueCapacity = 2_000;
            o.RejectionPolicy = RejectionPolicy.Abort; // the endpoint uses TryExecute: full means 503, never a wait

            // A tenant per merchant (ForTenant below): one merchant's flood takes its turn with the others instead of
            // filling the queue, and when the queue is full the merchant with the longest backlog is refused first.
            o.FairShare = new FairShareSettings { ShedLongestBacklog = true };
        }).BindConfiguration("BoundedWork:Executors:" + IncidentReplay.ExecutorName);

        // The nightly reconciliation, on the same bounded executor as the side effects (see NightlyReconciliation).
        builder.Services.AddRecurring<NightlyReconciliation>(
            NightlyReconciliation.Name, RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"), IncidentReplay.ExecutorName);

        var sampler = new ThreadPoolSampler(TimeSpan.FromMilliseconds(builder.Configuration.GetValue("SampleIntervalMs", 1000)));
        builder.Services.AddSingleton(sampler);
        builder.Services.AddHostedService(_ => sampler);

        builder.Services.AddBoundedWorkAdmin();

        // The incident tool's way in: the console's JSON API on a per-process Unix socket, answered on dedicated
        // threads while the ThreadPool is starved (bw ps, bw top, bw resize payments 16).
        builder.Services.AddBoundedWorkDiagnosticsSocket();

        // --OpenTelemetry:Exporter console: traces and metrics to the console (off by default).
        builder.Services.AddCallbackTelemetry(builder.Configuration);
        configureServices?.Invoke(builder.Services);

        var app = builder.Build();
        MapEndpoints(app);
        MapAdminConsole(app);
        return app;
    }

    private static void MapEndpoints(WebApplication app)
    {
        // The bystander: unrelated traffic that shares the process and its ThreadPool.
        app.MapGet("/ping", () => "pong");

        // The common way #1: fire and forget onto the shared ThreadPool.
        app.MapPost("/callbacks/naive", (PaymentCallback callback, IPaymentDependency dependency, CallbackCounters counters) =>
        {
            counters.Naive.OnReceived();
            _ = Task.Run(() =>
            {
                dependency.Call(callback);
                counters.Naive.OnCompleted();
            });
            return Results.Accepted();
        });

        // The common way #2: do it inline, blocking the request's ThreadPool thread.
        app.MapPost("/callbacks/naive-sync", (PaymentCallback callback, IPaymentDependency dependency, CallbackCounters counters) =>
        {
            counters.NaiveSync.OnReceived();
            dependency.Call(callback);
            counters.NaiveSync.OnCompleted();
            return Results.Ok();
        });

        // The fix: hand the side effect to the executor's own threads. TryExecute never blocks the request thread;
        // when the queue is full the caller gets a fast 503 with Retry-After (counted), so the payment provider
        // retries later instead of this service building a backlog it cannot run.
        app.MapPost("/callbacks/bounded", (
            HttpContext context,
            PaymentCallback callback,
            IPaymentDependency dependency,
            CallbackCounters counters,
            [FromKeyedServices(IncidentReplay.ExecutorName)] BoundedExecutor executor) =>
        {
            counters.Bounded.OnReceived();
            if (executor.ForTenant(callback.Tenant).TryExecute(SideEffectCall.Run, new SideEffectCall(dependency, callback, counters.Bounded)))
            {
                return Results.Accepted();
            }

            counters.Bounded.OnRejected();
            context.Response.Headers.RetryAfter = "1";
            return Results.Problem(
                statusCode: StatusCodes.Status503ServiceUnavailable,
                title: "The payments queue is full",
                detail: "Retry after the number of seconds in Retry-After.");
        });

        app.MapGet("/stats", (HttpContext context) =>
            Results.Json(ReadStats(context.RequestServices, context.Request.Query.ContainsKey("collect")), StatsJson.Default.ServerStats));
        app.MapGet("/stats/capacity", (HttpContext context) =>
            Results.Json(ReadCapacity(context.RequestServices), CapacityJson.Default.CapacityStats));
        app.MapPost("/stats/reset-peaks", (ThreadPoolSampler sampler) =>
        {
            sampler.ResetPeaks();
            return Results.NoContent();
        });
    }

    private static void MapAdminConsole(WebApplication app)
    {
        if (app.Environment.IsDevelopment())
        {
            // ---- DEVELOPMENT ONLY -------------------------------------------------------------------------------
            // Anyone who can reach 127.0.0.1 may read AND resize the executors. Never ship this: in production,
            // register the "BoundedWorkAdmin" authorization policy with your authentication
            // (builder.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.RequireRole("ops"))))
            // and map the console without AllowAnonymousAdmin().
            app.MapBoundedWorkAdmin("/bounded-work").AllowAnonymousAdmin();
            // -------------------------------------------------------------------------------------------------------
        }
        else
        {
            Log.AdminConsoleNotMapped(app.Logger);
        }
    }

    /// <summary>Reads every counter; with <paramref name="collect"/>, after a full blocking garbage collection.</summary>
    /// <param name="services">The app's services.</param>
    /// <param name="collect">Whether to collect garbage first (for memory figures).</param>
    /// <returns>The stats.</returns>
    internal static ServerStats ReadStats(IServiceProvider services, bool collect)
    {
        if (collect)
        {
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            GC.WaitForPendingFinalizers();
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
        }

        var counters = services.GetRequiredService<CallbackCounters>();
        var options = services.GetRequiredService<IOptions<SideEffectOptions>>().Value;
        var executor = services.GetRequiredKeyedService<BoundedExecutor>(IncidentReplay.ExecutorName);
        var flow = services.GetRequiredService<IOptionsMonitor<BoundedExecutorOptions>>().Get(IncidentReplay.ExecutorName).FlowExecutionContext;

        // Endpoint counters first, then one executor snapshot: once the load has stopped, the two agree exactly.
        var received = counters.Bounded.Received;
        var rejected = counters.Bounded.Rejected;
        var s = executor.GetStatistics();
        var accepted = received - rejected;
        var balanced = s.Rejected == rejected
            && accepted == s.Completed + s.Failed + s.Cancelled + s.Discarded + s.QueueLength + s.Starting + s.Running + s.Abandoned;

        using var process = Process.GetCurrentProcess();
        return new ServerStats(
            Stopwatch.GetElapsedTime(s_started).TotalSeconds,
            new SideEffectSettings(options.MinDelayMs, options.MaxDelayMs, options.CpuIterations),
            Naive(counters.Naive),
            Naive(counters.NaiveSync),
            new BoundedStats(received, accepted, rejected, s.Completed, s.Failed, s.QueueLength, s.Starting + s.Running, s.Abandoned,
                s.TargetWorkerCount, s.BusyWorkerCount, s.QueueCapacity, flow, balanced),
            services.GetRequiredService<ThreadPoolSampler>().Current,
            new ProcessStats(GC.GetTotalMemory(false), process.WorkingSet64, process.PrivateMemorySize64, process.Threads.Count,
                GC.CollectionCount(2), GC.GetTotalPauseDuration().TotalMilliseconds));
    }

    /// <summary>Reads the workers, the queue, the endpoints and the dependency for the adaptive-workers benchmark.</summary>
    /// <param name="services">The app's services.</param>
    /// <returns>The capacity stats.</returns>
    internal static CapacityStats ReadCapacity(IServiceProvider services)
    {
        var counters = services.GetRequiredService<CallbackCounters>();
        var executor = services.GetRequiredKeyedService<BoundedExecutor>(IncidentReplay.ExecutorName);
        var dependency = services.GetRequiredService<IPaymentDependency>() as LimitedCapacityDependency;
        var s = executor.GetStatistics();
        return new CapacityStats(
            Stopwatch.GetElapsedTime(s_started).TotalSeconds, s.TargetWorkerCount, s.LiveWorkerCount, s.BusyWorkerCount,
            s.QueueLength, s.OldestQueuedItemAge.TotalMilliseconds, counters.Bounded.Completed, counters.Bounded.Rejected,
            counters.Naive.Completed, counters.Naive.Received, ThreadPool.ThreadCount, dependency?.Read());
    }

    private static EndpointStats Naive(EndpointCounter counter)
    {
        var completed = counter.Completed;
        var received = counter.Received;
        return new EndpointStats(received, completed, received - completed);
    }

    private static void StopWhenStdinCloses(IHostApplicationLifetime lifetime)
    {
        var thread = new Thread(() =>
        {
            while (Console.In.ReadLine() is not null)
            {
            }

            lifetime.StopApplication();
        })
        { IsBackground = true, Name = "stdin watcher" };
        thread.UnsafeStart();
    }

    private static partial class Log
    {
        [LoggerMessage(1, LogLevel.Warning, "The admin console is not mapped outside Development: this sample registers no authentication. Run with --environment Development.")]
        public static partial void AdminConsoleNotMapped(ILogger logger);
    }
}
