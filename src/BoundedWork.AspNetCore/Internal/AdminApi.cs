using System.Buffers;
using System.Net.Http.Headers;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// What the console answers, independent of the transport: the Kestrel endpoints and the local socket listener both
/// call these. Nothing here waits or yields: each answer is computed and serialized on the calling thread.
/// </summary>
internal sealed class AdminApi(IBoundedExecutorRegistry registry, IEnumerable<IWorkQueueStorage> storages, AdminSampler sampler, AdminMetrics metrics, ILogger logger, IEnumerable<IDeadLetterStore>? deadLetterStores = null, IEnumerable<IWorkQueueCluster>? clusters = null, IEnumerable<IStoredItemSearch>? itemStores = null)
{
    private readonly Dictionary<string, IWorkQueueStorage> _storages = storages.ToDictionary(storage => storage.QueueName, StringComparer.Ordinal);
    private readonly HashSet<string> _deadLetterQueues = new((deadLetterStores ?? []).Select(store => store.QueueName), StringComparer.Ordinal);
    private readonly HashSet<string> _itemQueues = new((itemStores ?? []).Select(store => store.QueueName), StringComparer.Ordinal);
    private readonly HashSet<string> _clusterQueues = new((clusters ?? []).Select(cluster => cluster.QueueName), StringComparer.Ordinal);

    public AdminReply ListExecutors(bool history)
    {
        var executors = new List<ExecutorResponse>(registry.Names.Count);
        foreach (var name in registry.Names)
        {
            executors.Add(Describe(registry.GetExecutor(name), history));
        }

        return AdminReply.Ok(new ExecutorListResponse(DateTimeOffset.UtcNow, executors), AdminJsonContext.Readable.ExecutorListResponse);
    }

    public AdminReply GetExecutor(string name, bool history) =>
        registry.TryGetExecutor(name, out var executor)
            ? AdminReply.Ok(Describe(executor, history) with { Running = DescribeRunning(executor) }, AdminJsonContext.Readable.ExecutorResponse)
            : NotFound(name);

    public AdminReply GetThreadPool(bool history) => AdminReply.Ok(sampler.GetThreadPool(history), AdminJsonContext.Readable.ThreadPoolResponse);

    public static AdminReply MethodNotAllowed(string method, string path, string allow) =>
        AdminReply.Problem(405, "Method not allowed", $"{method} is not allowed on {path}; allowed: {allow}.", allow: allow);

    /// <summary>Applies a PUT workers (<paramref name="workersOnly"/>) or PATCH settings request, or says why not.</summary>
    public AdminReply ChangeSettings(ChangeRequest request, bool workersOnly)
    {
        var name = request.ExecutorName;
        registry.TryGetExecutor(name, out var executor); // null for a name that is not registered: refused below, after the checks that come first
        if (CheckChangeRules(request, "the settings") is { } broken)
        {
            return Refuse(request, executor, broken.Reason, broken.Problem);
        }

        if (executor is null)
        {
            return Refuse(request, null, "not_found", NotFound(name));
        }

        var pin = default(PinRequest);
        var (change, errors) = request.BodyTooLarge
            ? (null, ChangeRequest.TooLarge(SettingsRequest.MaxBodyBytes))
            : SettingsRequest.Parse(request.Body, workersOnly, executor.Settings, executor.MaxWorkerCount, out pin);
        if (change is null)
        {
            var unlisted = errors.Count - errors.Listed.Count;
            return Refuse(request, executor, "invalid", AdminReply.Problem(
                request.InvalidBodyStatus,
                "Invalid settings",
                $"The settings of executor '{executor.Name}' are unchanged: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}"
                    + (unlisted > 0 ? $" And {unlisted} more fields with problems ({errors.Count} in all), not listed." : string.Empty),
                errors.Listed,
                executor.Name,
                errorCount: unlisted > 0 ? errors.Count : null));
        }

        BoundedExecutorReconfiguration result;
        try
        {
            // The pin comes first, so that no adaptive decision lands between the change and the pin, and the log says
            // which count it replaced; a pin holds whatever the mode, so it holds once the change turns the mode on.
            var before = executor.Settings;
            ApplyPin(executor, pin);
            result = new BoundedExecutorReconfiguration(before, executor.Reconfigure(change).Current);
        }
        catch (InvalidOperationException) when (executor.IsShutdown)
        {
            return Refuse(request, executor, "shut_down", AdminReply.Problem(
                409,
                "Executor shut down",
                $"Executor '{executor.Name}' is shutting down or shut down; its settings can no longer change.",
                executor: executor.Name));
        }

        Record(executor.Name, request, result);
        RecordPin(executor.Name, request, pin);
        return AdminReply.Ok(
            new ReconfigurationResponse(executor.Name, View(result.Previous), View(result.Current), Workers(executor.GetStatistics())),
            AdminJsonContext.Readable.ReconfigurationResponse);
    }

    /// <summary>
    /// The rules every change meets before anything else, in order: where it comes from (an anonymous console's
    /// <see cref="LocalOrigin"/> rule), a JSON content type, and the request header that cross-site requests cannot
    /// add. Returns the refusal's reason (for the log and the metric) and its answer, or <see langword="null"/>.
    /// </summary>
    /// <param name="request">The change.</param>
    /// <param name="what">What the body holds, for the 415 answer ("the settings").</param>
    public static (string Reason, AdminReply Problem)? CheckChangeRules(ChangeRequest request, string what)
    {
        if (request.OriginRefusal is { } refusal)
        {
            return (refusal.Reason, AdminReply.Problem(403, "Forbidden", refusal.Detail));
        }

        if (request.DuplicateHeader is { } duplicate)
        {
            return ("duplicate_header", AdminReply.Problem(
                400,
                "Duplicate request header",
                $"The request carries the header '{duplicate}' more than once; send it once, so that there is no doubt which value counts.",
                header: duplicate));
        }

        if (!IsJson(request.ContentType))
        {
            return ("unsupported_media_type", AdminReply.Problem(
                415,
                "Unsupported media type",
                $"Send {what} as JSON: the Content-Type must be application/json (was '{request.ContentType ?? "none"}')."));
        }

        if (!request.HasRequestHeader)
        {
            return ("missing_header", AdminReply.Problem(
                400,
                "Missing request header",
                $"Changes must carry the request header '{BoundedWorkAdminOptions.RequestHeaderName}' (any non-empty value), which a cross-site form or a simple cross-origin request cannot add.",
                header: BoundedWorkAdminOptions.RequestHeaderName));
        }

        return null;
    }

    /// <summary>Whether a Content-Type names JSON: <c>application/json</c> or <c>application/*+json</c>, any parameters.</summary>
    public static bool IsJson(string? contentType) =>
        MediaTypeHeaderValue.TryParse(contentType, out var parsed)
        && parsed.MediaType is { } mediaType
        && (string.Equals(mediaType, "application/json", StringComparison.OrdinalIgnoreCase)
            || (mediaType.StartsWith("application/", StringComparison.OrdinalIgnoreCase) && mediaType.EndsWith("+json", StringComparison.OrdinalIgnoreCase)));

    private void Record(string name, ChangeRequest request, BoundedExecutorReconfiguration result)
    {
        var (before, after) = (result.Previous, result.Current);
        if (logger.IsEnabled(LogLevel.Information))
        {
            logger.SettingsChanged(
                AdminLog.Escape(name),
                AdminLog.Escape(request.User),
                request.RemoteAddress,
                before.WorkerCount,
                after.WorkerCount,
                before.QueueCapacity,
                after.QueueCapacity,
                before.RejectionPolicy,
                after.RejectionPolicy,
                SettingsRequest.FormatTimeout(before.WaitTimeout),
                SettingsRequest.FormatTimeout(after.WaitTimeout),
                SettingsRequest.FormatTimeout(before.SlowItemThreshold),
                SettingsRequest.FormatTimeout(after.SlowItemThreshold),
                SettingsRequest.FormatTimeout(before.QueueWaitThreshold),
                SettingsRequest.FormatTimeout(after.QueueWaitThreshold));
        }

        foreach (var setting in result.ChangedSettings)
        {
            metrics.Changed(name, SettingsRequest.ToField(setting));
        }
    }

    /// <summary>
    /// Logs and counts a refused change. The metric's executor tag is a registered executor's name or
    /// <see cref="AdminMetrics.UnknownExecutor"/>, never what the request asked for, so callers cannot grow the tag's
    /// values; the log keeps the requested name, escaped.
    /// </summary>
    private AdminReply Refuse(ChangeRequest request, BoundedExecutor? executor, string reason, AdminReply problem)
    {
        metrics.Refused(executor?.Name ?? AdminMetrics.UnknownExecutor, reason);
        logger.SettingsChangeRefused(
            AdminLog.Escape(executor?.Name ?? request.ExecutorName), AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    /// <summary>Pins (a resize while adaptive, or <c>"pinned": true</c>) or unpins the worker count, as the change asked.</summary>
    private static void ApplyPin(BoundedExecutor executor, PinRequest pin)
    {
        if (pin.Unpin)
        {
            executor.UnpinWorkerCount();
        }
        else if (pin.Pin)
        {
            executor.PinWorkerCount(pin.Workers ?? executor.Settings.WorkerCount, pin.PinFor);
        }
    }

    private void RecordPin(string name, ChangeRequest request, PinRequest pin)
    {
        if ((pin.Pin || pin.Unpin) && logger.IsEnabled(LogLevel.Information))
        {
            logger.WorkerCountPinChanged(
                AdminLog.Escape(name),
                AdminLog.Escape(request.User),
                request.RemoteAddress,
                pin.Unpin ? "unpinned" : pin.PinFor == Timeout.InfiniteTimeSpan ? "pinned until unpinned" : $"pinned for {SettingsRequest.FormatTimeout(pin.PinFor)}");
        }

        if (pin.Pin || pin.Unpin)
        {
            metrics.Changed(name, SettingsRequest.Pinned);
        }
    }

    private static AdaptiveView DescribeAdaptive(BoundedExecutor executor, BoundedExecutorStatistics s, int decisions) =>
        new(
            s.AdaptiveMode.ToString(),
            s.AdaptiveMinWorkerCount,
            s.AdaptiveMaxWorkerCount,
            s.IsWorkerCountPinned,
            s.WorkerCountPinnedUntil,
            s.RunTimeBaseline is { } baseline ? Math.Round(baseline.TotalMilliseconds, 3) : null,
            s.WorkerCountDecisions,
            [.. executor.GetWorkerCountDecisions().TakeLast(decisions).Select(static d => new DecisionView(
                d.Time, d.OldCount, d.NewCount, d.Rule, d.Applied, Math.Round(d.MinQueueWait.TotalMilliseconds, 3), d.QueueLength,
                Math.Round(d.CompletedPerSecond, 1), d.RunTime is { } r ? Math.Round(r.TotalMilliseconds, 3) : null, d.Description))]);

    private ExecutorResponse Describe(BoundedExecutor executor, bool history)
    {
        var s = executor.GetStatistics();
        return new ExecutorResponse(
            s.Name,
            s.IsShutdown,
            Workers(s),
            new QueueView(s.QueueLength, s.QueueCapacity, Math.Round(s.OldestQueuedItemAge.TotalMilliseconds, 3), s.WaitingProducers),
            new SettingsView(s.TargetWorkerCount, s.QueueCapacity, s.RejectionPolicy.ToString(), SettingsRequest.FormatTimeout(s.WaitTimeout), SettingsRequest.FormatTimeout(s.SlowItemThreshold), SettingsRequest.FormatTimeout(s.QueueWaitThreshold), s.PermitsPerSecond, s.PermitBurst, s.AdaptiveMode.ToString(), executor.Settings.AdaptiveMinWorkerCount, executor.Settings.AdaptiveMaxWorkerCount),
            new CountersView(s.Submitted, s.Completed, s.Failed, s.Cancelled, s.Rejected, s.Discarded, s.Abandoned, s.CallerRuns, s.CallbackFailures, s.ThreadPoolBlockingWaits, s.Running, s.SlowItemsReported, s.LongQueueWaitsReported, s.WorkersReplaced, s.Starting, s.RunningOnCallers),
            sampler.GetRates(s),
            history ? sampler.GetHistory(s.Name, s.AdaptiveMode != AdaptiveMode.Off) : null,
            null,
            _storages.TryGetValue(s.Name, out var storage) ? DescribeStorage(storage) : null,
            DescribeRateLimit(s, executor.Settings.RateLimiter),
            DescribeAdaptive(executor, s, history ? AdaptiveDriverLog : RecentDecisions),
            DescribePause(s),
            DescribeTenants(executor));
    }

    /// <summary>The most tenants the executor document lists (the busiest first).</summary>
    public const int TopTenants = 10;

    /// <summary>The busiest tenants, or <see langword="null"/> (the field left out) while fair share has seen none.</summary>
    private static List<TenantView>? DescribeTenants(BoundedExecutor executor)
    {
        var tenants = executor.GetTenantStatistics(TopTenants);
        return tenants.Count == 0 ? null : [.. tenants.Select(static t => new TenantView(
            t.Tenant, t.Weight, t.Queued, t.Running, t.Completed, t.Failed, t.Refused, Math.Round(t.AverageQueueWait.TotalMilliseconds, 3)))];
    }

    private static PauseView DescribePause(BoundedExecutorStatistics s) => new(s.IsPaused, s.PauseReason, s.PausedSince, s.PausedUntil);

    /// <summary>Applies a pause (<c>POST /executors/{name}/pause</c>) or says why not; audited as a settings change is.</summary>
    public AdminReply Pause(ChangeRequest request)
    {
        registry.TryGetExecutor(request.ExecutorName, out var executor);
        if (CheckChangeRules(request, "the pause") is { } broken)
        {
            return Refuse(request, executor, broken.Reason, broken.Problem);
        }

        if (executor is null)
        {
            return Refuse(request, null, "not_found", NotFound(request.ExecutorName));
        }

        var (reason, duration, errors) = request.BodyTooLarge
            ? (null, Timeout.InfiniteTimeSpan, ChangeRequest.TooLarge(PauseRequest.MaxBodyBytes))
            : PauseRequest.ParsePause(request.Body);
        if (reason is null)
        {
            return Refuse(request, executor, "invalid", AdminReply.Problem(
                request.InvalidBodyStatus,
                "Invalid pause",
                $"Executor '{executor.Name}' is not paused by this request: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}",
                errors.Listed,
                executor.Name));
        }

        try
        {
            executor.Pause(reason, duration);
        }
        catch (InvalidOperationException) when (executor.IsShutdown)
        {
            return Refuse(request, executor, "shut_down", ShutDown(executor, "paused"));
        }

        if (logger.IsEnabled(LogLevel.Information))
        {
            logger.ExecutorPaused(
                AdminLog.Escape(executor.Name),
                duration == Timeout.InfiniteTimeSpan ? "until resumed" : $"for {SettingsRequest.FormatTimeout(duration)}",
                AdminLog.Escape(request.User),
                request.RemoteAddress,
                AdminLog.Escape(reason));
        }

        metrics.Changed(executor.Name, "paused");
        return AdminReply.Ok(new PauseResponse(executor.Name, DescribePause(executor.GetStatistics()), Changed: true), AdminJsonContext.Readable.PauseResponse);
    }

    /// <summary>Ends a pause (<c>POST /executors/{name}/resume</c>) or says why not; a resume of an executor that is not paused changes nothing and says so.</summary>
    public AdminReply Resume(ChangeRequest request)
    {
        registry.TryGetExecutor(request.ExecutorName, out var executor);
        if (CheckChangeRules(request, "the resume") is { } broken)
        {
            return Refuse(request, executor, broken.Reason, broken.Problem);
        }

        if (executor is null)
        {
            return Refuse(request, null, "not_found", NotFound(request.ExecutorName));
        }

        var errors = request.BodyTooLarge ? ChangeRequest.TooLarge(PauseRequest.MaxBodyBytes) : PauseRequest.ParseResume(request.Body);
        if (errors.Count > 0)
        {
            return Refuse(request, executor, "invalid", AdminReply.Problem(
                request.InvalidBodyStatus,
                "Invalid resume",
                $"Executor '{executor.Name}' is not resumed by this request: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}",
                errors.Listed,
                executor.Name));
        }

        if (executor.IsShutdown)
        {
            return Refuse(request, executor, "shut_down", ShutDown(executor, "resumed"));
        }

        var before = executor.GetStatistics();
        var changed = executor.Resume();
        if (changed)
        {
            if (logger.IsEnabled(LogLevel.Information))
            {
                logger.ExecutorResumed(AdminLog.Escape(executor.Name), AdminLog.Escape(request.User), request.RemoteAddress, AdminLog.Escape(before.PauseReason ?? string.Empty));
            }

            metrics.Changed(executor.Name, "paused");
        }

        return AdminReply.Ok(new PauseResponse(executor.Name, DescribePause(executor.GetStatistics()), changed), AdminJsonContext.Readable.PauseResponse);
    }

    private static AdminReply ShutDown(BoundedExecutor executor, string what) => AdminReply.Problem(
        409,
        "Executor shut down",
        $"Executor '{executor.Name}' is shutting down or shut down; it can no longer be {what}.",
        executor: executor.Name);

    /// <summary>The decisions an executor's document shows: the last few, or (with the history) the whole log.</summary>
    private const int RecentDecisions = 10;
    private const int AdaptiveDriverLog = 64;

    private static RateLimitView DescribeRateLimit(BoundedExecutorStatistics s, System.Threading.RateLimiting.RateLimiter? custom) => new(
        custom is not null ? "custom" : s.PermitsPerSecond > 0 ? "permitsPerSecond" : "none",
        custom?.GetType().Name,
        s.PermitsPerSecond,
        s.PermitBurst,
        s.RateLimitWaitingWorkers,
        s.PermitsAcquired,
        s.PermitsRefused,
        Math.Round(s.RateLimitWaitTime.TotalMilliseconds, 3));

    private StorageView DescribeStorage(IWorkQueueStorage storage)
    {
        var s = storage.Statistics;
        return new StorageView(
            storage.StorageKind,
            s.IsAvailable,
            s.LastError,
            s.Ready,
            s.Scheduled,
            s.Running,
            s.DeadLettered,
            s.Completed,
            Math.Round(s.OldestReadyAge.TotalMilliseconds, 3),
            s.ReadAt == DateTimeOffset.MinValue ? null : s.ReadAt,
            s.Cancelled,
            _deadLetterQueues.Contains(storage.QueueName),
            _clusterQueues.Contains(storage.QueueName),
            _itemQueues.Contains(storage.QueueName),
            s.Tenants is { Count: > 0 } tenants ? [.. tenants.Select(static t => new StoredTenantView(t.Tenant, t.Ready, t.Running, t.Completed, t.Failed, t.DeadLettered))] : null);
    }

    private static List<RunningItemView> DescribeRunning(BoundedExecutor executor) =>
        [.. executor.GetRunningItems()
            .OrderByDescending(r => r.Elapsed)
            .Select(r => new RunningItemView(
                r.WorkerName,
                Math.Round(r.Elapsed.TotalMilliseconds, 3),
                r.Item.Description))];

    private static WorkersView Workers(BoundedExecutorStatistics s) =>
        new(s.TargetWorkerCount, s.LiveWorkerCount, s.BusyWorkerCount, s.PeakWorkerCount, s.MaxWorkerCount, s.SlowWorkerCount);

    private static SettingsView View(BoundedExecutorSettings s) =>
        new(s.WorkerCount, s.QueueCapacity, s.RejectionPolicy.ToString(), SettingsRequest.FormatTimeout(s.WaitTimeout), SettingsRequest.FormatTimeout(s.SlowItemThreshold), SettingsRequest.FormatTimeout(s.QueueWaitThreshold), s.PermitsPerSecond, s.PermitBurst, s.AdaptiveMode.ToString(), s.AdaptiveMinWorkerCount, s.AdaptiveMaxWorkerCount);

    private static AdminReply NotFound(string name) =>
        AdminReply.Problem(404, "Unknown executor", $"No executor named '{name}' is registered.", executor: name);
}

/// <summary>
/// A settings change as it arrived, whatever the transport. <see cref="OriginRefusal"/> is set by a transport that
/// refuses the request for where it came from (an anonymous console's rule against DNS rebinding, <see cref="LocalOrigin"/>).
/// <see cref="DuplicateHeader"/> names a header the console reads (<c>Content-Type</c>, the request header) that the
/// request carries more than once: the change is refused rather than read by one of the copies.
/// </summary>
internal readonly record struct ChangeRequest(
    string ExecutorName,
    string? ContentType,
    bool HasRequestHeader,
    ReadOnlySequence<byte> Body,
    bool BodyTooLarge,
    string User,
    string RemoteAddress,
    OriginRefusal? OriginRefusal = null,
    string? DuplicateHeader = null)
{
    /// <summary>Gets the status of a refused body: 413 when it was over the endpoint's cap, else 400.</summary>
    public int InvalidBodyStatus => BodyTooLarge ? 413 : 400;

    /// <summary>The error of a body over the endpoint's cap of <paramref name="maxBytes"/>, against <c>body</c>.</summary>
    public static FieldErrors TooLarge(int maxBytes) => new() { [SettingsRequest.Body] = [$"The request body is larger than {maxBytes} bytes."] };
}
