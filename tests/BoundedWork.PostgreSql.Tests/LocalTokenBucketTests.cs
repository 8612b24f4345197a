using BoundedWork.PostgreSql.Internal;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>A node's share of the start rate, spent locally (<see cref="LocalTokenBucket"/>), on a clock the test moves.</summary>
public sealed class LocalTokenBucketTests
{
    [Fact]
    public void NewShare_StartsEmpty_FillsAtItsRate_UpToItsBurst()
    {
        var clock = new FakeTimeProvider();
        var bucket = new LocalTokenBucket(clock);
        bucket.SetShare(2, 3);
        Assert.Equal(0, bucket.Take(10));
        Assert.Equal(TimeSpan.FromSeconds(0.5), bucket.TimeToNextToken());

        clock.Advance(TimeSpan.FromSeconds(0.5));
        Assert.Equal(1, bucket.Take(10));
        clock.Advance(TimeSpan.FromSeconds(10));
        Assert.Equal(3, bucket.Take(10)); // never more than the burst
        bucket.Refund(2);
        Assert.Equal(2, bucket.Take(10));
    }

    [Fact]
    public void ShareMovedAway_AndBack_StartsEmptyAgain_SmallerBurst_DropsTheTokensAboveIt()
    {
        var clock = new FakeTimeProvider();
        var bucket = new LocalTokenBucket(clock);
        bucket.SetShare(1, 4);
        clock.Advance(TimeSpan.FromSeconds(10));
        bucket.SetShare(1, 2);
        Assert.Equal(2.0, bucket.Tokens);

        bucket.SetShare(0, 0); // the share went to another node (or the grant lapsed)
        bucket.SetShare(1, 4);
        Assert.Equal(0, bucket.Take(4));

        // A grown share keeps its tokens; the growth brings none.
        clock.Advance(TimeSpan.FromSeconds(1));
        bucket.SetShare(5, 8);
        Assert.Equal(1, bucket.Take(8));
    }

    [Theory]
    [InlineData(3.0, 2, 17)]
    [InlineData(0.5, 1, 5)]
    [InlineData(10.0, 4, 99)]
    public void AnyWindow_StartsAtMostBurstPlusRateTimesItsLength(double rate, int burst, int seed)
    {
        var clock = new FakeTimeProvider();
        var bucket = new LocalTokenBucket(clock);
        bucket.SetShare(rate, burst);
        var random = new Random(seed);
        var starts = new List<(TimeSpan At, int Count)>();
        var now = TimeSpan.Zero;
        for (var i = 0; i < 2000; i++)
        {
            var step = TimeSpan.FromMilliseconds(random.Next(0, 3) == 0 ? random.Next(0, 2000) : random.Next(0, 50));
            clock.Advance(step);
            now += step;
            var taken = bucket.Take(random.Next(0, 5));
            if (taken > 0)
            {
                starts.Add((now, taken));
            }
        }

        for (var a = 0; a < starts.Count; a++)
        {
            var sum = 0;
            for (var b = a; b < starts.Count; b++)
            {
                sum += starts[b].Count;
                var length = (starts[b].At - starts[a].At).TotalSeconds;
                Assert.True(sum <= burst + (rate * length) + 1e-9, $"{sum} starts within {length} s; the bound is {burst} + {rate} x {length}.");
            }
        }
    }
}
