using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's cluster view of the durable queues (<see cref="IWorkQueueCluster"/>), independent of the transport:
/// read a queue's cluster (nodes, limits and their use, stored items by state) and change its fleet-wide settings.
/// A change meets the console's rules (<see cref="AdminApi.CheckChangeRules"/>), is read as strictly as an executor's
/// settings (<see cref="ClusterSettingsRequest"/>), is made by the storage atomically with the operator's identity as
/// <c>changedBy</c>, and is audited like a local change: logged with who and every old and new value (event 211;
/// refusals 212; storage failures 213) and counted (<c>boundedwork.admin.changes</c>, <c>boundedwork.admin.refused</c>).
/// Like the dead-letter endpoints these wait for the database, asynchronously.
/// </summary>
internal sealed partial class ClusterApi
{
    private readonly Dictionary<string, IWorkQueueCluster> _clusters = new(StringComparer.Ordinal);
    private readonly AdminMetrics _metrics;
    private readonly ILogger _logger;

    public ClusterApi(IEnumerable<IWorkQueueCluster> clusters, AdminMetrics metrics, ILogger logger, IEnumerable<IWorkQueuePauseControl>? pauses = null)
    {
        foreach (var cluster in clusters)
        {
            _clusters.TryAdd(cluster.QueueName, cluster); // the first registered for a name serves it
        }

        foreach (var pause in pauses ?? [])
        {
            _pauses.TryAdd(pause.QueueName, pause);
        }

        _metrics = metrics;
        _logger = logger;
    }

    /// <summary>Gets whether the console serves the cluster of <paramref name="queue"/>.</summary>
    public bool Serves(string queue) => _clusters.ContainsKey(queue);

    public async Task<AdminReply> GetAsync(string queue, CancellationToken cancellationToken)
    {
        if (!_clusters.TryGetValue(queue, out var cluster))
        {
            return UnknownQueue(queue);
        }

        WorkQueueCluster read;
        try
        {
            read = await cluster.GetClusterAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(queue, "read the cluster", ex);
        }

        var s = read.Storage;
        var use = read.LimitUse;
        return AdminReply.Ok(
            new ClusterResponse(
                queue,
                read.ReadAt,
                View(read.Settings),
                new ClusterLimitsView(
                    use.Running,
                    use.HandlersRunning,
                    Math.Max(use.Running - use.HandlersRunning, 0),
                    read.Settings.MaxRunning,
                    read.Settings.MaxRunningPerKey,
                    Math.Round(use.StartsLastSecond, 3),
                    read.Settings.StartsPerSecond,
                    read.Settings.StartBurst,
                    use.WaitingForPermit,
                    Math.Round(use.OldestPermitWait.TotalMilliseconds, 3)),
                [.. read.Nodes.Select(static n => new ClusterNodeView(
                    n.Name, n.Host, n.ProcessId, n.Version, n.StartedAt, n.LastSeen, n.WorkerCount, n.InFlight, n.HandlersRunning, n.Completed, n.Failed, n.SettingsVersion, n.PinnedLocally))],
                new ClusterStorageView(s.Ready, s.Scheduled, s.Running, s.DeadLettered, s.Completed, s.Cancelled, Math.Round(s.OldestReadyAge.TotalMilliseconds, 3)),
                View(read.Pauses)),
            ClusterJsonContext.Readable.ClusterResponse);
    }

    /// <summary>Changes a queue's fleet-wide settings as the body says (the fields it names, nothing else), or says why not.</summary>
    public async Task<AdminReply> ChangeAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        if (AdminApi.CheckChangeRules(request, "the cluster settings") is { } broken)
        {
            return Refuse(request, broken.Reason, broken.Problem);
        }

        var queue = request.ExecutorName;
        if (!_clusters.TryGetValue(queue, out var cluster))
        {
            return Refuse(request, "not_found", UnknownQueue(queue));
        }

        var (change, errors) = request.BodyTooLarge
            ? (null, ChangeRequest.TooLarge(ClusterSettingsRequest.MaxBodyBytes))
            : ClusterSettingsRequest.Parse(request.Body);
        if (change is null)
        {
            return Refuse(request, "invalid", Invalid(queue, errors, request.InvalidBodyStatus));
        }

        WorkQueueClusterSettings? previous = null;
        WorkQueueClusterSettings current;
        try
        {
            // The storage calls the change under its lock with the settings in force; the last call is the one it wrote.
            current = await cluster.UpdateSettingsAsync(
                settings =>
                {
                    previous = settings;
                    return change(settings);
                },
                request.User,
                cancellationToken).ConfigureAwait(false);
        }
        catch (ArgumentException ex)
        {
            // The storage's own validation is the last word, reported under the JSON field it names.
            return Refuse(request, "invalid", Invalid(queue, new FieldErrors { [ClusterSettingsRequest.FieldOf(ex)] = [MessageOf(ex)] }));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, "unavailable", Unavailable(queue, "change the fleet-wide settings", ex));
        }

        previous ??= current;
        Record(queue, request, previous, current);
        return AdminReply.Ok(new ClusterChangeResponse(queue, View(previous), View(current)), ClusterJsonContext.Readable.ClusterChangeResponse);
    }

    private void Record(string queue, ChangeRequest request, WorkQueueClusterSettings before, WorkQueueClusterSettings after)
    {
        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.ClusterSettingsChanged(
                AdminLog.Escape(queue),
                AdminLog.Escape(request.User),
                request.RemoteAddress,
                before.Version,
                after.Version,
                ClusterSettingsRequest.Format(before.WorkersPerNode),
                ClusterSettingsRequest.Format(after.WorkersPerNode),
                ClusterSettingsRequest.Format(before.MaxRunning),
                ClusterSettingsRequest.Format(after.MaxRunning),
                before.MaxRunningPerKey,
                after.MaxRunningPerKey,
                ClusterSettingsRequest.Format(before.StartsPerSecond),
                ClusterSettingsRequest.Format(after.StartsPerSecond),
                ClusterSettingsRequest.Format(before.StartBurst),
                ClusterSettingsRequest.Format(after.StartBurst));
            if (!Equals(before.FairShare, after.FairShare))
            {
                // Fair share has its own entry: its change lists each tenant whose weight changed.
                _logger.ClusterFairShareChanged(
                    AdminLog.Escape(queue),
                    AdminLog.Escape(request.User),
                    request.RemoteAddress,
                    before.Version,
                    after.Version,
                    FairShareRequest.Describe(before.FairShare, after.FairShare));
            }
        }

        foreach (var field in ClusterSettingsRequest.Changed(before, after))
        {
            _metrics.Changed(queue, field);
        }
    }

    /// <summary>Logs and counts a refused change. The metric's tag is a served queue's name or <see cref="AdminMetrics.UnknownExecutor"/>.</summary>
    private AdminReply Refuse(ChangeRequest request, string reason, AdminReply problem)
    {
        _metrics.Refused(_clusters.ContainsKey(request.ExecutorName) ? request.ExecutorName : AdminMetrics.UnknownExecutor, reason);
        _logger.ClusterSettingsChangeRefused(AdminLog.Escape(request.ExecutorName), AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static ClusterSettingsView View(WorkQueueClusterSettings s) =>
        new(s.WorkersPerNode, s.MaxRunning, s.MaxRunningPerKey, s.StartsPerSecond, s.StartBurst, s.Version, s.UpdatedAt, s.UpdatedBy, FairShareRequest.View(s.FairShare));

    /// <summary>An <see cref="ArgumentException"/>'s message without the " (Parameter 'x')" the runtime appends.</summary>
    private static string MessageOf(ArgumentException exception)
    {
        var message = exception.Message;
        var suffix = exception.ParamName is { } name ? $" (Parameter '{name}')" : null;
        message = suffix is not null && message.EndsWith(suffix, StringComparison.Ordinal) ? message[..^suffix.Length] : message;
        return SettingsRequest.Shorten(ClusterSettingsRequest.WithoutStoragePrefix(message), 300);
    }

    private static AdminReply UnknownQueue(string queue) =>
        AdminReply.Problem(404, "Unknown queue", $"No durable work queue named '{SettingsRequest.Shorten(queue)}' has a cluster here (an in-memory queue runs on one node only; a durable queue's storage registers its cluster).", queue: SettingsRequest.Shorten(queue));

    private static AdminReply Invalid(string queue, FieldErrors errors, int status = 400) =>
        AdminReply.Problem(
            status,
            "Invalid cluster settings",
            $"The fleet-wide settings of work queue '{queue}' are unchanged: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}"
                + (errors.Count > errors.Listed.Count ? $" And {errors.Count - errors.Listed.Count} more fields with problems ({errors.Count} in all), not listed." : string.Empty),
            errors.Listed,
            errorCount: errors.Count > errors.Listed.Count ? errors.Count : null,
            queue: queue);

    private AdminReply Unavailable(string queue, string what, Exception error)
    {
        if (_logger.IsEnabled(LogLevel.Error))
        {
            _logger.ClusterStorageFailed(AdminLog.Escape(queue), what, error);
        }

        return AdminReply.Problem(503, "Storage unavailable", $"Work queue '{queue}' could not {what}: {SettingsRequest.Shorten(error.GetBaseException().Message, 300)}", queue: queue);
    }
}
