using System.Diagnostics;
using System.Runtime.ExceptionServices;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The consumer side: claiming, listening (<see cref="NotificationListener"/>), running a delivery, and deciding its outcome.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    public void Run(StoredItem item)
    {
        if (!item.TryStart())
        {
            return;
        }

        if (item.IsCancellationRequested)
        {
            Cancelled(item, "cancelled before it ran");
            return;
        }

        if (FleetPause is not null)
        {
            // The queue is paused fleet-wide: an item claimed before this node heard of it does not start; handed back
            // unrun (its attempt not counted), it is ready again for the first claim after the pause.
            Release(item);
            return;
        }

        if (!_permits.Starting())
        {
            // Under a start rate, no token for it in time (its node's share shrank or lapsed since the claim): it does
            // not start; released, it is ready again for the next claim that has a token.
            Release(item);
            return;
        }

        // The item stays held (and its worker's claim counted) until the writer has written the outcome posted here.
        RunDelivery(item);
    }

    public void Release(StoredItem item)
    {
        Post(item, OutcomeKind.Released);
        StorageMetrics.Released.Add(1, StorageMetrics.QueueTag(Name));
    }

    /// <summary>Posts a delivery's outcome: from now on a cancellation of the item no longer concerns this node.</summary>
    private void Post(StoredItem item, OutcomeKind kind, TimeSpan retryDelay = default, string? error = null)
    {
        _leases.Posted(item);
        // The handler ended: its permit is free now, before the outcome's commit, and goes straight to the oldest
        // reserved item, if any (started here, with no claim in between; the claim loop refills the reserve). Freed
        // before the outcome is posted, so that the writer's hand-off (see IOutcomeHandOff) finds it free.
        if (_permits.Finished(item, out var next))
        {
            _settingsChanged.Set(); // the row still holds permits above the allowance: give them back now
        }

        // A final end of a keyed item starts its key's prefetched item, if the node holds one (KeyBook, I3): taken
        // before the outcome is posted, so that the writer's hand-off does not count it as still prefetched.
        var prefetched = _keys.Ended(item, kind, out var orphan);
        _outcomes.Post(item, kind, retryDelay, error);
        _claimLoop.Posted(); // carrying outcomes with its claims and out of room, the claim loop waits for this one

        if (next is not null)
        {
            Execute(next);
        }

        if (prefetched is not null)
        {
            StartPrefetched(prefetched);
        }
        else if (orphan is not null)
        {
            ReleasePrefetched([orphan], "its key's last handler on this node ended without a final outcome, or the cluster limits changed since it was claimed");
        }

        if (_permits.IsLimited)
        {
            _claimLoop.Wake();
        }
        CountForCluster(kind);
        DurableTracing.StopProcess(item.Process, kind, error);
    }

    private void Cancelled(StoredItem item, string error)
    {
        Post(item, OutcomeKind.Cancelled, error: error);
        StorageMetrics.Cancelled.Add(1, StorageMetrics.QueueTag(Name));
    }

    /// <summary>Someone asked to cancel a stored item: if this node holds it, its handler's token fires (or, not started, it will not run).</summary>
    private void OnCancellationRequested(long id)
    {
        if (_leases.TryGetDelivery(id, out var item))
        {
            var callbackFailure = item.RequestCancellation();
            _logger.CancellationRequested(Name, id, callbackFailure);
            CancelIfNotStarted(item);
        }
    }

    /// <summary>The writer wrote (or, at a stop, gave up on) the outcomes of <paramref name="settled"/>: those items are no longer held (nor their leases renewed), and the claim loop may take more.</summary>
    private void OnOutcomesSettled(IReadOnlyList<HeldDelivery> settled)
    {
        foreach (var delivery in settled)
        {
            _leases.Settled(delivery);
        }

        _room.Settled(settled.Count);
        _claimLoop.Wake();
    }

    /// <summary>
    /// How many items this node may hold now: the executor's current workers times the claims per worker, within what
    /// the executor can hold. An item is held from its claim until its outcome is written.
    /// </summary>
    private int ClaimLimit()
    {
        var settings = Executor.Settings;
        var perWorker = (long)settings.WorkerCount * _options.ClaimsPerWorker;
        return (int)Math.Min(perWorker, (long)settings.WorkerCount + settings.QueueCapacity);
    }

    int IClaimLoopHost.WorkerCount => Executor.Settings.WorkerCount;

    void IClaimLoopHost.Hold(StoredItem item) => Hold(item);

    void IClaimLoopHost.Execute(StoredItem item) => Execute(item);

    void IClaimLoopHost.Apply((List<StoredItem> Start, List<StoredItem> Release) reserve) => Apply(reserve);

    void IClaimLoopHost.ReapExpiredLeases() => ReapExpiredLeases();

    void IClaimLoopHost.RenewGrantNow() => _settingsChanged.Set();

    void IClaimLoopHost.Succeeded(string loop)
    {
        if (_health.Succeeded(loop))
        {
            _logger.StorageRecovered(Name, loop);
        }
    }

    TimeSpan IClaimLoopHost.Failed(string loop, Exception error, TimeSpan delay, CancellationToken cancellationToken) =>
        ReportFailure(loop, error, delay, cancellationToken);

    void INotificationListenerHost.Listening()
    {
        _claimLoop.Wake();
        _settingsChanged.Set();
    }

    void INotificationListenerHost.Wake() => _claimLoop.Wake();

    void INotificationListenerHost.CancellationRequested(long id) => OnCancellationRequested(id);

    void INotificationListenerHost.SettingsChanged(string payload) => OnSettingsNotification(payload);

    void INotificationListenerHost.Succeeded(string loop) => ((IClaimLoopHost)this).Succeeded(loop);

    TimeSpan INotificationListenerHost.Failed(string loop, Exception error, TimeSpan delay, CancellationToken cancellationToken) =>
        ReportFailure(loop, error, delay, cancellationToken);

    /// <summary>Returns to ready the rows whose node stopped renewing its lease; dead-letters those at their last delivery.</summary>
    private void ReapExpiredLeases()
    {
        List<DeadLetter<T>>? dead = null;
        var reaped = 0;
        using (var connection = _dataSource.OpenConnection())
        using (var command = _statements.Reap.Command(connection, new ReapParameters(Name, MaxDeliveries)))
        {
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                reaped++;
                var row = ReapStatement.Read(reader);
                if (row.State == StorageSql.Cancelled)
                {
                    StorageMetrics.Cancelled.Add(1, StorageMetrics.QueueTag(Name));
                }
                else if (row.State == StorageSql.Dead)
                {
                    var (item, error) = TryDeserialize(row.Payload);
                    (dead ??= []).Add(new DeadLetter<T>(Name, row.Id, item!, DeadLetterReason.LeaseExpired, null,
                        new TimeoutException(row.LastError, error), row.Attempts, row.Payload));
                }
            }
        }

        if (reaped == 0)
        {
            return;
        }

        StorageMetrics.LeasesExpired.Add(reaped, StorageMetrics.QueueTag(Name));
        _logger.LeasesExpired(Name, reaped, dead?.Count ?? 0);
        foreach (var letter in dead ?? [])
        {
            StorageMetrics.DeadLettered.Add(1, StorageMetrics.QueueTag(Name));
            Deliver(letter);
        }
    }

    /// <summary>Marks the loop failing, logs its first failure, and waits before the next try (doubling, up to the maximum); returns at once when the token fires.</summary>
    private TimeSpan ReportFailure(string loop, Exception error, TimeSpan delay, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return delay;
        }

        if (_health.Failed(loop, error))
        {
            _logger.StorageUnavailable(Name, loop, delay, error);
        }

        cancellationToken.WaitHandle.WaitOne(delay);
        return TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, _options.MaxReconnectDelay.Ticks));
    }

    /// <summary>Delivers a dead letter to the handlers on this thread (a worker or a storage thread, never the ThreadPool's).</summary>
    private void Deliver(DeadLetter<T> letter) => _context.DeliverDeadLetter(letter);

    /// <summary>Gets how many deliveries an item gets: its first attempt and the queue's retries (again, after a requeue).</summary>
    private int MaxDeliveries => _context.MaxDeliveries;

    /// <summary>
    /// Runs one delivery and posts its outcome. The outcome is posted before anything that could throw (a logger, a
    /// meter listener): an item whose outcome is never posted stays this node's claim, and held, while the node lives.
    /// </summary>
    private void RunDelivery(StoredItem item)
    {
        var (value, malformed) = TryDeserialize(item.Payload);
        if (malformed is not null)
        {
            DeadLetter(item, new DeadLetter<T>(Name, item.Id, default!, DeadLetterReason.Malformed, null, malformed, item.Attempts - 1, item.Payload));
            _logger.MalformedPayload(Name, item.Id, typeof(T).Name, malformed);
            return;
        }

        StoredOutcome outcome;
        Interlocked.Increment(ref _handlersRunning);
        try
        {
            outcome = _context.Run(value!, new StoredDelivery(item.Id, item.Attempts, item.AttemptBase, item.EnqueuedAt, item.TraceParent, item.TraceState, item.Payload), item.CancellationToken);
        }
        finally
        {
            Interlocked.Decrement(ref _handlersRunning);
        }

        switch (outcome.Kind)
        {
            case StoredOutcomeKind.Completed:
                // Finished despite a cancellation asked meanwhile: it completed.
                Post(item, OutcomeKind.Completed);
                StorageMetrics.Completed.Add(1, StorageMetrics.QueueTag(Name));
                TenantOutcomes.Add(item.Tenant, TenantOutcomes.Outcome.Completed);
                break;
            case StoredOutcomeKind.Cancelled:
                // The handler stopped (or failed) after its item was cancelled: not retried, not a dead letter.
                Cancelled(item, "cancelled while running: " + Describe(outcome.Exception));
                break;
            case StoredOutcomeKind.Snoozed:
                // The handler asked to run again later: stored scheduled, the delivery not counted.
                Post(item, OutcomeKind.Snoozed, outcome.RetryDelay);
                StorageMetrics.Snoozed.Add(1, StorageMetrics.QueueTag(Name));
                _logger.DurableItemSnoozed(Name, item.Id, item.Attempts, outcome.RetryDelay);
                break;
            case StoredOutcomeKind.Retry:
                Post(item, OutcomeKind.Retry, outcome.RetryDelay, Describe(outcome.Exception));
                StorageMetrics.Retried.Add(1, StorageMetrics.QueueTag(Name));
                TenantOutcomes.Add(item.Tenant, TenantOutcomes.Outcome.Failed);
                _logger.RetryStored(Name, item.Id, item.Attempts, outcome.RetryDelay, outcome.Exception!);
                break;
            default:
                // The context has delivered the dead letter to the handlers: record it (a crash between the two delivers it again).
                RecordDeadLetter(item, DeadLetterReason.Failed, outcome.Exception);
                break;
        }
    }

    /// <summary>Delivers the dead letter to the handlers, then records it in the table (a crash between the two delivers it again).</summary>
    private void DeadLetter(StoredItem item, DeadLetter<T> letter)
    {
        Deliver(letter);
        RecordDeadLetter(item, letter.Reason, letter.Exception);
    }

    private void RecordDeadLetter(StoredItem item, DeadLetterReason reason, Exception? exception)
    {
        Post(item, OutcomeKind.Dead, error: reason + ": " + Describe(exception));
        StorageMetrics.DeadLettered.Add(1, StorageMetrics.QueueTag(Name));
        TenantOutcomes.Add(item.Tenant, TenantOutcomes.Outcome.DeadLettered);
    }

    /// <summary>
    /// Reads a stored payload. Whatever the deserializer throws (the serializer's own errors, or anything a user's
    /// converter or the type's constructor throws) is returned, not thrown: the item is malformed and becomes a dead
    /// letter, and the worker or the reaper goes on.
    /// </summary>
    private (T? Item, Exception? Error) TryDeserialize(string payload)
    {
        try
        {
            return Deserialize(payload) is { } item ? (item, null) : (default, new JsonException($"The stored payload is JSON null, not a {typeof(T).Name}."));
        }
        catch (Exception ex)
        {
            return (default, ex);
        }
    }

    private static string? Describe(Exception? exception) => exception is null ? null : $"{exception.GetType().FullName}: {exception.Message}";
}
