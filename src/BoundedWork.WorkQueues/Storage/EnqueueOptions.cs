namespace BoundedWork.Hosting;

/// <summary>
/// How one enqueue stores its items (<c>IDurableWorkQueue&lt;T&gt;.EnqueueAsync(item, options)</c> and
/// <c>EnqueueManyAsync(items, options)</c>): when they may run, how they rank against other ready items, and an
/// idempotency key. Validated by the enqueue, which names the bad property.
/// </summary>
public sealed record EnqueueOptions
{
    /// <summary>The lowest <see cref="Priority"/>.</summary>
    public const int MinPriority = -100;

    /// <summary>The highest <see cref="Priority"/>.</summary>
    public const int MaxPriority = 100;

    /// <summary>The longest <see cref="Tenant"/>, in characters: 100 (the same bound as an executor's tenant).</summary>
    public const int MaxTenantLength = 100;

    /// <summary>The longest <see cref="Delay"/>, and the furthest <see cref="RunAt"/> may lie ahead.</summary>
    public static readonly TimeSpan MaxDelay = TimeSpan.FromDays(365);

    /// <summary>
    /// Gets how long the item waits before it may run, counted on the storage's clock from the enqueue
    /// (for PostgreSQL, the database server's clock; inside a caller's transaction, from that transaction's start). The item is stored at
    /// once, as scheduled, and runs within a few milliseconds of its time when a worker is free. Not with
    /// <see cref="RunAt"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no delay. Between zero and 365 days.</value>
    public TimeSpan? Delay { get; init; }

    /// <summary>
    /// Gets the time the item may run at, compared with the storage's clock (for PostgreSQL, the database server's); a time already past runs now
    /// (and ranks before the items of its priority that became due after it), <c>default(DateTimeOffset)</c> included. Not with <see cref="Delay"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: now. At most 365 days ahead of this machine's clock.</value>
    public DateTimeOffset? RunAt { get; init; }

    /// <summary>
    /// Gets the item's priority: of the ready items of a queue, those with the highest priority are claimed first,
    /// then, within a priority, the one that became due first (first in, first out). Priority is strict: lower
    /// priorities wait while higher ones are ready (give work that must not wait a queue of its own). An ordering key
    /// wins over priority: an item never overtakes an older item of its key.
    /// </summary>
    /// <value>Defaults to 0. Between <see cref="MinPriority"/> (-100) and <see cref="MaxPriority"/> (100); higher runs first.</value>
    public int Priority { get; init; }

    /// <summary>
    /// Gets an idempotency key: when an item of the queue with this key is stored, the enqueue stores nothing and
    /// returns that item's id (<see cref="EnqueueResult.IsDuplicate"/>). The way to retry an enqueue whose outcome is
    /// unknown (the connection was lost during the commit, so the caller cannot tell whether it committed) without
    /// running the item twice. A key of the caller's choosing, unique per queue (a callback's or a message's id, say):
    /// 1 to 256 characters of valid Unicode text without a NUL character, compared exactly (ordinal). The queue
    /// remembers it as long as the item's row exists: while the item is ready, scheduled, running, and after it
    /// completed or became a dead letter until cleanup deletes the row (<c>CompletedRetention</c>,
    /// <c>DeadLetterRetention</c>). Afterwards the key is free again. Single items only: a bulk enqueue refuses it.
    /// A bad key is refused by the enqueue with an <see cref="ArgumentException"/> whose parameter is <c>idempotencyKey</c>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no key.</value>
    public string? IdempotencyKey { get; init; }

    /// <summary>
    /// Gets the tenant the items belong to (a merchant, an account, a customer): the fairness key of a durable queue
    /// whose fleet-wide settings turn fair share on (<c>WorkQueueClusterSettings.FairShare</c>). Claims then take ready
    /// items from the tenants in weighted turn, and a tenant never has more than its bound running across the fleet.
    /// Separate from the ordering key: a tenant's items run in parallel unless they share a key. Stored with the item and
    /// shown by the stored-item search; ignored by the claims while fair share is off. A bulk enqueue gives it to every item.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no tenant. 1 to <see cref="MaxTenantLength"/> characters, no control characters, compared ordinally.</value>
    public string? Tenant { get; init; }

    /// <summary>
    /// Validates enqueue options the way every storage does, before it stores anything: the exception names the bad
    /// property.
    /// </summary>
    /// <param name="options">The options.</param>
    /// <param name="time">The clock <see cref="RunAt"/> is compared with.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="time"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">The delay, the time to run at or the priority is out of range.</exception>
    /// <exception cref="ArgumentException">Both <see cref="Delay"/> and <see cref="RunAt"/> are set, or <see cref="Tenant"/> is empty, too long or holds a control character.</exception>
    public static void Validate(EnqueueOptions options, TimeProvider time)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(time);
        if (options.Delay is { } delay && (delay < TimeSpan.Zero || delay > MaxDelay))
        {
            throw new ArgumentOutOfRangeException(nameof(options), delay, "EnqueueOptions.Delay must be between zero and 365 days.");
        }

        if (options.RunAt is { } runAt)
        {
            if (options.Delay is not null)
            {
                throw new ArgumentException("EnqueueOptions.RunAt and EnqueueOptions.Delay cannot both be set: give a time to run at, or a delay.", nameof(options));
            }

            if (runAt - time.GetUtcNow() > MaxDelay)
            {
                throw new ArgumentOutOfRangeException(nameof(options), runAt, "EnqueueOptions.RunAt must be at most 365 days ahead.");
            }
        }

        if (options.Priority is < MinPriority or > MaxPriority)
        {
            throw new ArgumentOutOfRangeException(nameof(options), options.Priority, "EnqueueOptions.Priority must be between -100 and 100.");
        }

        if (GetTenantError(options.Tenant) is { } tenantError)
        {
            throw new ArgumentException(tenantError, nameof(options));
        }
    }

    /// <summary>Returns why <paramref name="tenant"/> cannot be an item's tenant (the message names <c>EnqueueOptions.Tenant</c>), or <see langword="null"/> when it can (no tenant included).</summary>
    /// <param name="tenant">The tenant, or <see langword="null"/>.</param>
    /// <returns>The message, or <see langword="null"/>.</returns>
    public static string? GetTenantError(string? tenant)
    {
        if (tenant is null)
        {
            return null;
        }

        if (tenant.Length is 0 or > MaxTenantLength)
        {
            return $"EnqueueOptions.Tenant must be 1 to {MaxTenantLength} characters (was {tenant.Length}).";
        }

        for (var i = 0; i < tenant.Length; i++)
        {
            var c = tenant[i];
            if (char.IsControl(c))
            {
                return $"EnqueueOptions.Tenant must not contain control characters (one at index {i}).";
            }

            if (char.IsSurrogate(c) && !(char.IsHighSurrogate(c) && i + 1 < tenant.Length && char.IsLowSurrogate(tenant[i + 1])))
            {
                return $"EnqueueOptions.Tenant must be valid Unicode text (a lone surrogate at index {i}).";
            }

            if (char.IsHighSurrogate(c))
            {
                i++;
            }
        }

        return null;
    }
}
