extern alias driver;

using driver::PaymentCallbacks.LoadDriver;

namespace PaymentCallbacks.Tests;

public sealed class WrkOutputTests
{
    private const string Sample = """
        Running 10s test @ http://127.0.0.1:41234/callbacks/bounded
          2 threads and 125 connections
          Thread Stats   Avg      Stdev     Max   +/- Stdev
            Latency     5.12ms    2.10ms   1.20s    80.00%
            Req/Sec    10.31k     1.02k   12.00k    70.00%
          Latency Distribution
             50%  850.00us
             75%    4.10ms
             90%    9.50ms
             99%    2.50s
          206160 requests in 10.00s, 30.12MB read
          Socket errors: connect 0, read 3, write 0, timeout 12
          Non-2xx or 3xx responses: 174898
        Requests/sec:  20616.00
        Transfer/sec:      3.01MB
        """;

    [Fact]
    public void Parse_WrkLatencyOutput_ReadsPercentilesMaxErrorsAndRate()
    {
        var output = WrkOutput.Parse(Sample);

        Assert.Equal(0.85, output.P50Ms, 6);
        Assert.Equal(9.5, output.P90Ms, 6);
        Assert.Equal(2500, output.P99Ms, 6);
        Assert.Equal(1200, output.MaxMs, 6);
        Assert.Equal(206_160, output.Requests);
        Assert.Equal(174_898, output.Non2xx);
        Assert.Equal(15, output.SocketErrors);
        Assert.Equal(20_616, output.RequestsPerSecond, 6);
    }

    [Fact]
    public void Parse_NoErrorLines_ReportsZeroErrors()
    {
        var output = WrkOutput.Parse(Sample.Replace("Socket errors: connect 0, read 3, write 0, timeout 12", "", StringComparison.Ordinal)
            .Replace("Non-2xx or 3xx responses: 174898", "", StringComparison.Ordinal));

        Assert.Equal(0, output.SocketErrors);
        Assert.Equal(0, output.Non2xx);
    }
}
