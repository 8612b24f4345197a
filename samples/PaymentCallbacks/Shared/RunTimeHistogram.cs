namespace PaymentCallbacks.Shared;

/// <summary>
/// Call durations in logarithmic buckets (each 5% wider than the one before, from 50 µs to about 2 minutes), counted
/// without a lock. Readers take cumulative snapshots; the difference of two snapshots is the histogram of the calls
/// finished in between, so a percentile over any window costs two reads.
/// </summary>
internal sealed class RunTimeHistogram
{
    /// <summary>The number of buckets.</summary>
    public const int Buckets = 300;

    private const double SmallestMs = 0.05;
    private static readonly double s_logGrowth = Math.Log(1.05);
    private readonly long[] _counts = new long[Buckets];

    /// <summary>Counts one call.</summary>
    /// <param name="duration">How long it took.</param>
    public void Record(TimeSpan duration) => Interlocked.Increment(ref _counts[BucketOf(duration.TotalMilliseconds)]);

    /// <summary>Reads every bucket's count so far.</summary>
    /// <returns>A copy of the cumulative counts.</returns>
    public long[] Snapshot()
    {
        var copy = new long[Buckets];
        for (var i = 0; i < Buckets; i++)
        {
            copy[i] = Volatile.Read(ref _counts[i]);
        }

        return copy;
    }

    /// <summary>The bucket of a duration.</summary>
    /// <param name="ms">Milliseconds.</param>
    /// <returns>The bucket's index.</returns>
    public static int BucketOf(double ms) =>
        ms <= SmallestMs ? 0 : Math.Min(Buckets - 1, (int)(Math.Log(ms / SmallestMs) / s_logGrowth));

    /// <summary>The middle of a bucket, in milliseconds (geometric).</summary>
    /// <param name="bucket">The bucket.</param>
    /// <returns>Milliseconds.</returns>
    public static double MidpointMs(int bucket) => SmallestMs * Math.Exp((bucket + 0.5) * s_logGrowth);

    /// <summary>The calls counted in <paramref name="later"/> but not in <paramref name="earlier"/>.</summary>
    /// <param name="earlier">An earlier snapshot (or <see langword="null"/> for none).</param>
    /// <param name="later">A later snapshot.</param>
    /// <returns>The per-bucket difference.</returns>
    public static long[] Between(long[]? earlier, long[] later)
    {
        ArgumentNullException.ThrowIfNull(later);
        var difference = new long[later.Length];
        for (var i = 0; i < later.Length; i++)
        {
            difference[i] = later[i] - (earlier is null ? 0 : earlier[i]);
        }

        return difference;
    }

    /// <summary>A percentile of a histogram, in milliseconds (the bucket's middle; 5% resolution).</summary>
    /// <param name="counts">The histogram.</param>
    /// <param name="percentile">Between 0 and 1.</param>
    /// <returns>Milliseconds, or 0 for an empty histogram.</returns>
    public static double PercentileMs(long[] counts, double percentile)
    {
        ArgumentNullException.ThrowIfNull(counts);
        var total = counts.Sum();
        if (total == 0)
        {
            return 0;
        }

        var rank = Math.Max(1, (long)Math.Ceiling(percentile * total));
        long seen = 0;
        for (var i = 0; i < counts.Length; i++)
        {
            seen += counts[i];
            if (seen >= rank)
            {
                return MidpointMs(i);
            }
        }

        return MidpointMs(counts.Length - 1);
    }

    /// <summary>The mean of a histogram, in milliseconds (from the buckets' middles).</summary>
    /// <param name="counts">The histogram.</param>
    /// <returns>Milliseconds, or 0 for an empty histogram.</returns>
    public static double MeanMs(long[] counts)
    {
        ArgumentNullException.ThrowIfNull(counts);
        var total = counts.Sum();
        return total == 0 ? 0 : counts.Select((c, i) => c * MidpointMs(i)).Sum() / total;
    }
}
