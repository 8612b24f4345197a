using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// The settings version a claim saw, against the version its permits were taken under and the node's grant now
/// (<see cref="ClusterPermits.Stale"/>), without a server: a renewal may commit while a claim's statement runs.
/// </summary>
public sealed class ClusterPermitsVersionTests
{
    [Fact]
    public void ClaimSawItsPermitsVersion_GrantRenewedToANewerOneMeanwhile_NotStale_TheNodeGoesOnClaiming()
    {
        var permits = Granted(version: 1);
        var take = permits.Take(2);
        Assert.Equal((2, 1L), (take.Count, take.Version));

        Grant(permits, version: 2); // the renewal committed while the claim's statement ran under version 1
        Assert.False(permits.Stale(take.Version, seen: 1, out var renew));
        Assert.False(renew);
        permits.Return(2, take.Rated);
        Assert.Equal(2, permits.Take(2).Count);
    }

    [Fact]
    public void ClaimSawANewerVersion_RenewalCaughtUpMeanwhile_StaleClaim_NoRenewal_TheNodeGoesOnClaiming()
    {
        var permits = Granted(version: 1);
        var take = permits.Take(2);

        Grant(permits, version: 2); // the change and the renewal both committed while the claim ran
        Assert.True(permits.Stale(take.Version, seen: 2, out var renew));
        Assert.False(renew);
        permits.Return(2, take.Rated);
        Assert.Equal(2, permits.Take(2).Count);
    }

    [Fact]
    public void ClaimSawANewerVersion_GrantNotRenewed_StaleClaim_NothingMoreUntilTheRenewal()
    {
        var permits = Granted(version: 1);
        var take = permits.Take(2);

        Assert.True(permits.Stale(take.Version, seen: 2, out var renew));
        Assert.True(renew);
        permits.Return(2, take.Rated);
        Assert.Equal(0, permits.Take(2).Count);

        Grant(permits, version: 2);
        Assert.Equal(2, permits.Take(2).Count);
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
