namespace BoundedWork.PostgreSql;

/// <summary>
/// The options of a durable queue's cluster rate limiter (<see cref="IPostgreSqlWorkQueue{T}.CreateClusterRateLimiter"/>):
/// how many permits it may hold at once in this process, how many may wait, and its name in the cluster view.
/// </summary>
public sealed class PostgreSqlClusterRateLimiterOptions
{
    /// <summary>The longest <see cref="Name"/>, in characters.</summary>
    private const int MaxNameLength = 200;

    /// <summary>
    /// Gets or sets the most permits the limiter holds at once in this process: its leases never hold more, and it asks
    /// the fleet for a share of the queue's limits as a node with this many workers would.
    /// </summary>
    /// <value>No default: 1 to 100,000 (0, the initial value, is refused).</value>
    public int PermitLimit { get; set; }

    /// <summary>
    /// Gets or sets the most permits that may wait in <see cref="System.Threading.RateLimiting.RateLimiter.AcquireAsync"/>
    /// for a lease, oldest first; a request beyond it fails at once.
    /// </summary>
    /// <value>Defaults to 0 (no request waits). 0 to 1,000,000.</value>
    public int QueueLimit { get; set; }

    /// <summary>Gets or sets the limiter's name in the queue's cluster view, unique among the queue's nodes and limiters.</summary>
    /// <value>
    /// Defaults to <see langword="null"/>: <c>{host}:{process id}:limiter:{8 random hex digits}</c>, new for each
    /// limiter. 1 to 200 characters, without control characters.
    /// </value>
    public string? Name { get; set; }

    /// <summary>Throws when a setting is out of its range, naming it.</summary>
    internal void Validate()
    {
        if (PermitLimit is < 1 or > 100_000)
        {
            throw new ArgumentOutOfRangeException(nameof(PermitLimit), PermitLimit, $"{nameof(PermitLimit)} must be 1 to 100000 (was {PermitLimit}).");
        }

        if (QueueLimit is < 0 or > 1_000_000)
        {
            throw new ArgumentOutOfRangeException(nameof(QueueLimit), QueueLimit, $"{nameof(QueueLimit)} must be 0 to 1000000 (was {QueueLimit}).");
        }

        if (Name is { } name && (name.Length is < 1 or > MaxNameLength || string.IsNullOrWhiteSpace(name) || name.Any(char.IsControl)))
        {
            throw new ArgumentException($"{nameof(Name)} must be 1 to {MaxNameLength} characters, not only white space, without control characters (was {name.Length} characters).", nameof(Name));
        }
    }
}
