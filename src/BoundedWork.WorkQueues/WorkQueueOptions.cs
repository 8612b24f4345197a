using Polly;

namespace BoundedWork.Hosting;

/// <summary>
/// Settings of a typed work queue, given to <c>services.AddWorkQueue&lt;T, THandler&gt;(name, o =&gt; ...)</c> and
/// validated there. The executor's own settings (workers, capacity, policy) are configured through the options
/// builder that call returns.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// Unless <see cref="Pipeline"/> or <see cref="ConfigurePipeline"/> is set, each item runs through a Polly pipeline
/// of a retry (exponential backoff with jitter, <see cref="MaxRetryAttempts"/>, <see cref="RetryDelay"/>,
/// <see cref="MaxRetryDelay"/>; every exception except <see cref="OperationCanceledException"/> is retried) around a
/// per-attempt timeout (<see cref="AttemptTimeout"/>).
/// </remarks>
public sealed class WorkQueueOptions<T>
{
    /// <summary>
    /// Gets or sets how many times a failed item is retried by the default pipeline (by the storage, for a durable
    /// queue). An in-memory queue with <see cref="Pipeline"/> or <see cref="ConfigurePipeline"/> refuses to start when
    /// this, <see cref="RetryDelay"/> or <see cref="MaxRetryDelay"/> is set too: its pipeline's own retry is the one that runs.
    /// </summary>
    /// <value>Defaults to 3. Between 0 (no retry) and 100.</value>
    public int MaxRetryAttempts { get => _maxRetryAttempts; set { _maxRetryAttempts = value; RetrySettingsSet = true; } }

    /// <summary>Gets or sets the base delay of the default pipeline's exponential backoff (before jitter).</summary>
    /// <value>Defaults to 1 second. Between zero and 1 day.</value>
    public TimeSpan RetryDelay { get => _retryDelay; set { _retryDelay = value; RetrySettingsSet = true; } }

    /// <summary>Gets or sets the longest delay between two attempts of the default pipeline.</summary>
    /// <value>Defaults to 30 seconds. Between zero and 1 day, and not below <see cref="RetryDelay"/>.</value>
    public TimeSpan MaxRetryDelay { get => _maxRetryDelay; set { _maxRetryDelay = value; RetrySettingsSet = true; } }

    /// <summary>Gets a value indicating whether the application set a retry setting (not only left its default).</summary>
    internal bool RetrySettingsSet { get; private set; }

    private int _maxRetryAttempts = 3;
    private TimeSpan _retryDelay = TimeSpan.FromSeconds(1);
    private TimeSpan _maxRetryDelay = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long one attempt may take before the default pipeline cancels its token and counts it as a
    /// timeout; <see cref="Timeout.InfiniteTimeSpan"/> for none. A handler that ignores its token runs to the end.
    /// </summary>
    /// <value>Defaults to 30 seconds. Between 10 milliseconds and 1 day, or <see cref="Timeout.InfiniteTimeSpan"/>.</value>
    public TimeSpan AttemptTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets the function that gives an item's ordering key. Items with the same key (compared with
    /// <see cref="object.Equals(object?)"/>) run one at a time in submission order, retries included; items with
    /// different keys, or a <see langword="null"/> key, run in parallel.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no ordering.</value>
    public Func<T, object?>? OrderingKey { get; set; }

    /// <summary>
    /// Gets or sets the function that gives an item's tenant for fair share (see
    /// <see cref="BoundedExecutorSettings.FairShare"/> on the queue's executor): items of different tenants take their turn
    /// by the tenants' weights and count against the tenants' bounds, retries included. Separate from
    /// <see cref="OrderingKey"/>: a tenant's items still run in parallel unless they share a key.
    /// </summary>
    /// <value>
    /// Defaults to <see langword="null"/>: no tenant. A <see langword="null"/> tenant for an item means none; a tenant that
    /// is not a valid name (empty, over 100 characters, a control character) makes the enqueue throw an
    /// <see cref="ArgumentException"/> naming this setting.
    /// </value>
    public Func<T, string?>? TenantSelector { get; set; }

    /// <summary>
    /// Gets or sets a pipeline, built by the application, that replaces the default one. Its delays run on the
    /// pipeline's own <see cref="TimeProvider"/> and its telemetry does not carry the queue's name: prefer
    /// <see cref="ConfigurePipeline"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>.</value>
    public ResiliencePipeline? Pipeline { get; set; }

    /// <summary>
    /// Gets or sets a callback that adds the strategies of the queue's pipeline, replacing the default retry and
    /// timeout. The builder it gets already carries the queue's name (telemetry), its retry clock (delays on a
    /// dedicated timer thread) and the queue's telemetry listener (log lines).
    /// </summary>
    /// <value>Defaults to <see langword="null"/>.</value>
    public Action<ResiliencePipelineBuilder>? ConfigurePipeline { get; set; }

    /// <summary>Checks every setting; one message per invalid setting, each naming it.</summary>
    internal List<string> GetValidationErrors()
    {
        var errors = new List<string>();
        var day = TimeSpan.FromDays(1);
        if (MaxRetryAttempts is < 0 or > 100)
        {
            errors.Add($"MaxRetryAttempts must be between 0 and 100 (was {MaxRetryAttempts}).");
        }

        if (RetryDelay < TimeSpan.Zero || RetryDelay > day)
        {
            errors.Add($"RetryDelay must be between zero and 1 day (was {RetryDelay}).");
        }

        if (MaxRetryDelay < TimeSpan.Zero || MaxRetryDelay > day || MaxRetryDelay < RetryDelay)
        {
            errors.Add($"MaxRetryDelay must be between zero and 1 day and not below RetryDelay (was {MaxRetryDelay}, RetryDelay {RetryDelay}).");
        }

        if (AttemptTimeout != Timeout.InfiniteTimeSpan && (AttemptTimeout < TimeSpan.FromMilliseconds(10) || AttemptTimeout > day))
        {
            errors.Add($"AttemptTimeout must be between 10 milliseconds and 1 day, or Timeout.InfiniteTimeSpan (was {AttemptTimeout}).");
        }

        if (Pipeline is not null && ConfigurePipeline is not null)
        {
            errors.Add("Pipeline and ConfigurePipeline cannot both be set: pass a pipeline, or a callback that builds one.");
        }

        return errors;
    }
}
