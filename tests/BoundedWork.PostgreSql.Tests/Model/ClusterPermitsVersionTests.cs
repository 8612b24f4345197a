using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// The settings version a claim saw, against the version its permits were taken under and the node's grant now
/// (<see cref="ClusterPermits.Stale"/>), without a server: a renewal may commit while a claim's statement runs.
/// </summary>
public sealed class ClusterPermitsVersionTests
{
    /// <summary>
    /// A claim took 2 permits under version 1; then the grant was renewed to version 2 while its statement ran, or not;
    /// the claim saw version <paramref name="seen"/>. Whether the claim is stale, whether the node must renew its grant,
    /// and how many permits the node can take once the claim's are back (after the renewal, when it was missing: all).
    /// </summary>
    [Theory]
    [InlineData(true, 1, false, false, 2)] // saw its permits' version, grant renewed to a newer one meanwhile: not stale, the node goes on claiming
    [InlineData(true, 2, true, false, 2)] // saw a newer version, the renewal caught up meanwhile: stale claim, no renewal, the node goes on claiming
    [InlineData(false, 2, true, true, 0)] // saw a newer version, grant not renewed: stale claim, nothing more until the renewal
    public void Stale_ClaimAgainstItsPermitsVersionAndTheGrantNow(bool renewedMeanwhile, long seen, bool stale, bool renew, int takenAfter)
    {
        var permits = Granted(version: 1);
        var take = permits.Take(2);
        Assert.Equal((2, 1L), (take.Count, take.Version));

        if (renewedMeanwhile)
        {
            Grant(permits, version: 2); // committed while the claim's statement ran
        }

        Assert.Equal(stale, permits.Stale(take.Version, seen, out var renewal));
        Assert.Equal(renew, renewal);
        permits.Return(2, take.Rated);
        Assert.Equal(takenAfter, permits.Take(2).Count);

        if (!renewedMeanwhile)
        {
            Grant(permits, version: 2);
            Assert.Equal(2, permits.Take(2).Count);
        }
    }

    private static ClusterPermits Granted(long version)
    {
        var permits = new ClusterPermits(TimeProvider.System);
        Grant(permits, version);
        return permits;
    }

    private static void Grant(ClusterPermits permits, long version) =>
        permits.Granted(new PermitGrant(4, 4, 0, 0, 4), new GrantLimits(4, null, 0), 1, version, TimeProvider.System.GetTimestamp(), TimeSpan.FromHours(1));
}
