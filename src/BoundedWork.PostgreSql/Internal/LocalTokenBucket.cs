namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// A node's share of its queue's start rate, spent locally: a token bucket of capacity <see cref="Burst"/> refilled at
/// <see cref="Rate"/> tokens a second on the node's monotonic clock, so a start costs no round trip. Not thread-safe:
/// its owner (<see cref="ClusterPermits"/>) calls it under its lock.
/// </summary>
/// <remarks>
/// The bucket holds at most <see cref="Burst"/> tokens and gains them only by refill, so over any window of length L
/// its starts are at most <c>burst + rate * L</c>. A new share (from none) starts empty and a grown one keeps its
/// tokens (the growth brings none), so a share that moves from one node to another is not spent twice: over any
/// window the fleet's starts stay within <c>B + R * L</c> while the shares of the live nodes sum to at most B and R.
/// </remarks>
internal sealed class LocalTokenBucket(TimeProvider time)
{
    private double _tokens;
    private long _at = time.GetTimestamp();

    /// <summary>Gets the share of the start rate, in tokens per second (zero: no share, nothing starts).</summary>
    public double Rate { get; private set; }

    /// <summary>Gets the bucket's capacity, in whole tokens.</summary>
    public int Burst { get; private set; }

    /// <summary>Gets the tokens in the bucket now.</summary>
    public double Tokens
    {
        get
        {
            Refill();
            return _tokens;
        }
    }

    /// <summary>Sets the share: a new one (from none) starts empty; a smaller burst drops the tokens above it.</summary>
    public void SetShare(double rate, int burst)
    {
        Refill();
        if (Burst == 0 || Rate <= 0 || burst == 0 || rate <= 0)
        {
            _tokens = 0;
        }

        Rate = burst == 0 ? 0 : Math.Max(rate, 0);
        Burst = Rate == 0 ? 0 : burst;
        _tokens = Math.Min(_tokens, Burst);
    }

    /// <summary>Takes up to <paramref name="wanted"/> whole tokens; returns how many it took.</summary>
    public int Take(int wanted)
    {
        Refill();
        var taken = (int)Math.Min(Math.Max(wanted, 0), Math.Floor(_tokens));
        _tokens -= taken;
        return taken;
    }

    /// <summary>Gives back tokens taken and not spent (the claim found fewer items).</summary>
    public void Refund(int count)
    {
        Refill();
        _tokens = Math.Min(_tokens + Math.Max(count, 0), Burst);
    }

    /// <summary>
    /// Gets the time until the bucket holds a whole token beyond <paramref name="promised"/> (tokens promised to items
    /// not started yet, whose starts spend them at once); <see cref="TimeSpan.Zero"/> if it does, null without a share.
    /// </summary>
    public TimeSpan? TimeToNextToken(int promised = 0)
    {
        Refill();
        var needed = Math.Max(promised, 0) + 1;
        return Rate <= 0 ? null : _tokens >= needed ? TimeSpan.Zero : TimeSpan.FromSeconds((needed - _tokens) / Rate);
    }

    private void Refill()
    {
        var now = time.GetTimestamp();
        var elapsed = time.GetElapsedTime(_at, now).TotalSeconds;
        _at = now;
        if (elapsed > 0 && Rate > 0)
        {
            _tokens = Math.Min(Burst, _tokens + (Rate * elapsed));
        }
    }
}
