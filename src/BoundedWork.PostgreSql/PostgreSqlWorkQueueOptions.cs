using System.Text.Json;
using System.Text.RegularExpressions;

namespace BoundedWork.PostgreSql;

/// <summary>
/// Settings of a typed work queue stored in PostgreSQL, given to <c>.UsePostgreSql(connectionString, o =&gt; ...)</c>
/// and validated there. Retries (<c>MaxRetryAttempts</c>, <c>RetryDelay</c>, <c>MaxRetryDelay</c>), the per-attempt
/// timeout and the ordering key stay in the queue's own <c>WorkQueueOptions</c>.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
public sealed partial class PostgreSqlWorkQueueOptions<T>
{
    /// <summary>Gets or sets the database schema of the queue's tables; created on start if missing.</summary>
    /// <value>Defaults to <c>boundedwork</c>. Lower-case letters, digits and underscores, starting with a letter or underscore; at most 63.</value>
    public string Schema { get; set; } = "boundedwork";

    /// <summary>
    /// Gets or sets a value indicating whether this node handles items. A node that only produces (a web front end
    /// whose workers run elsewhere) sets it to <see langword="false"/>: it enqueues, reads statistics and cleans up,
    /// but claims nothing.
    /// </summary>
    /// <value>Defaults to <see langword="true"/>.</value>
    public bool Consume { get; set; } = true;

    /// <summary>
    /// Gets or sets how long a claimed item belongs to the node that claimed it without a heartbeat. The node renews its
    /// leases every third of this; when a node dies, its items are claimed again by any node once their lease expires.
    /// </summary>
    /// <value>Defaults to 30 seconds. Between 1 second and 1 day.</value>
    public TimeSpan LeaseDuration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how often the node looks for ready items without a wake-up (a notification, a local enqueue, or an
    /// outcome written, which frees a claim): the longest delay before a stored retry whose time has come, or an item of an expired lease, runs.
    /// </summary>
    /// <value>Defaults to 1 second. Between 10 milliseconds and 1 hour.</value>
    public TimeSpan PollInterval { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Gets or sets how many items the node holds claimed per worker of its executor. An item is held from its claim
    /// until its outcome is written to the table (queued on the executor, running, or handled and waiting for the
    /// write). The node holds up to <c>WorkerCount × ClaimsPerWorker</c> items (never more than the executor's workers
    /// plus its queue capacity), so resizing the executor at run time changes how much it claims, and a node that dies
    /// leaves at most that many items to run again. Raise it to drain a backlog of short items faster (on a two-core
    /// machine, of 2, 50, 100, 200 and 500 per worker, 200 drained fastest: a node then holds 400 items with two
    /// workers); each claim takes at most 500 items.
    /// </summary>
    /// <value>Defaults to 2. Between 1 and 1,000.</value>
    public int ClaimsPerWorker { get; set; } = 2;

    /// <summary>Gets or sets how long completed items are kept (for audits and idempotency checks) before cleanup deletes them; zero deletes them when they complete.</summary>
    /// <value>Defaults to 10 minutes. Between zero and 365 days.</value>
    public TimeSpan CompletedRetention { get; set; } = TimeSpan.FromMinutes(10);

    /// <summary>Gets or sets how long dead letters are kept in the table before cleanup deletes them; <see cref="Timeout.InfiniteTimeSpan"/> keeps them.</summary>
    /// <value>Defaults to 7 days. Between zero and 365 days, or <see cref="Timeout.InfiniteTimeSpan"/>.</value>
    public TimeSpan DeadLetterRetention { get; set; } = TimeSpan.FromDays(7);

    /// <summary>Gets or sets how often the node deletes completed items and dead letters whose retention ended.</summary>
    /// <value>Defaults to 1 minute. Between 100 milliseconds and 1 day.</value>
    public TimeSpan CleanupInterval { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>Gets or sets how often the node reads the queue's depth and oldest age from the database (statistics, metrics, health check, admin console).</summary>
    /// <value>Defaults to 5 seconds. Between 100 milliseconds and 1 hour.</value>
    public TimeSpan StatisticsInterval { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Gets or sets how many tenants get their own series in the per-tenant statistics and metrics of the queue (its
    /// busiest tenants by ready and running items, read with the statistics every <see cref="StatisticsInterval"/>):
    /// the rest are counted together as <see cref="TenantStatistics.OtherTenants"/>, so a metrics backend is never
    /// flooded, as <see cref="FairShareSettings.TenantSeriesLimit"/> does for an executor.
    /// </summary>
    /// <value>Defaults to 20. Between 0 (every tenant counted together) and <see cref="FairShareSettings.MaxTenantSeriesLimit"/>.</value>
    public int TenantSeriesLimit { get; set; } = 20;

    /// <summary>Gets or sets the longest wait between two attempts to reach the database after a connection or query failure (the wait doubles from 100 milliseconds).</summary>
    /// <value>Defaults to 5 seconds. Between 100 milliseconds and 5 minutes.</value>
    public TimeSpan MaxReconnectDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Gets or sets how long ready items may wait for a cluster permit (the queue's fleet-wide <c>MaxRunning</c> or
    /// <c>StartsPerSecond</c>) while this node has idle workers for them, before the health check reports the queue
    /// Degraded (and the node logs it once); <see cref="Timeout.InfiniteTimeSpan"/> never does.
    /// </summary>
    /// <value>Defaults to 1 minute. Between 1 second and 1 day, or <see cref="Timeout.InfiniteTimeSpan"/>.</value>
    public TimeSpan ClusterPermitWaitThreshold { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// Gets or sets the clock of the node's loops. Their intervals (lease reaping, statistics, cleanup) are measured
    /// with its monotonic timestamps (<see cref="TimeProvider.GetTimestamp"/>), so a wall clock that is set back or
    /// forward does not delay or hurry them; its wall-clock time only stamps the statistics' <c>ReadAt</c>.
    /// </summary>
    /// <value>Defaults to <see cref="TimeProvider.System"/>.</value>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>
    /// Gets or sets the System.Text.Json options of the reflection-based overload of <c>UsePostgreSql</c>; the
    /// overload that takes a source-generated <c>JsonTypeInfo&lt;T&gt;</c> ignores them.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: <see cref="JsonSerializerOptions.Default"/>.</value>
    public JsonSerializerOptions? JsonSerializerOptions { get; set; }

    /// <summary>Checks every setting; one message per invalid setting, each naming it.</summary>
    internal List<string> GetValidationErrors()
    {
        var errors = new List<string>();
        if (Schema is null || !SchemaName().IsMatch(Schema))
        {
            errors.Add($"Schema must be 1 to 63 lower-case letters, digits or underscores, starting with a letter or underscore (was '{Schema}').");
        }

        Check(errors, nameof(LeaseDuration), LeaseDuration, TimeSpan.FromSeconds(1), TimeSpan.FromDays(1));
        Check(errors, nameof(PollInterval), PollInterval, TimeSpan.FromMilliseconds(10), TimeSpan.FromHours(1));
        if (ClaimsPerWorker is < 1 or > 1000)
        {
            errors.Add($"ClaimsPerWorker must be between 1 and 1000 (was {ClaimsPerWorker}).");
        }

        Check(errors, nameof(CompletedRetention), CompletedRetention, TimeSpan.Zero, TimeSpan.FromDays(365));
        if (DeadLetterRetention != Timeout.InfiniteTimeSpan)
        {
            Check(errors, nameof(DeadLetterRetention), DeadLetterRetention, TimeSpan.Zero, TimeSpan.FromDays(365), " or Timeout.InfiniteTimeSpan");
        }

        Check(errors, nameof(CleanupInterval), CleanupInterval, TimeSpan.FromMilliseconds(100), TimeSpan.FromDays(1));
        Check(errors, nameof(StatisticsInterval), StatisticsInterval, TimeSpan.FromMilliseconds(100), TimeSpan.FromHours(1));
        if (TenantSeriesLimit is < 0 or > FairShareSettings.MaxTenantSeriesLimit)
        {
            errors.Add($"TenantSeriesLimit must be between 0 and {FairShareSettings.MaxTenantSeriesLimit} (was {TenantSeriesLimit}).");
        }

        Check(errors, nameof(MaxReconnectDelay), MaxReconnectDelay, TimeSpan.FromMilliseconds(100), TimeSpan.FromMinutes(5));
        if (ClusterPermitWaitThreshold != Timeout.InfiniteTimeSpan)
        {
            Check(errors, nameof(ClusterPermitWaitThreshold), ClusterPermitWaitThreshold, TimeSpan.FromSeconds(1), TimeSpan.FromDays(1), " or Timeout.InfiniteTimeSpan");
        }

        if (TimeProvider is null)
        {
            errors.Add("TimeProvider must be set (was null).");
        }

        AddClusterValidationErrors(errors);
        return errors;
    }

    private static void Check(List<string> errors, string name, TimeSpan value, TimeSpan min, TimeSpan max, string alternative = "")
    {
        if (value < min || value > max)
        {
            errors.Add($"{name} must be between {min} and {max}{alternative} (was {value}).");
        }
    }

    [GeneratedRegex("^[a-z_][a-z0-9_]{0,62}$")]
    private static partial Regex SchemaName();
}
