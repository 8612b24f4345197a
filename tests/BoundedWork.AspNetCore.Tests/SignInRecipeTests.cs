using System.IdentityModel.Tokens.Jwt;
using System.Net;
using System.Net.Http.Headers;
using System.Security.Claims;
using System.Security.Cryptography;
using System.Text;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;
using Microsoft.IdentityModel.Tokens;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The admin console's sign-in recipe (docs/admin-console.md, "Set up"), run as the page shows it: a browser signs
/// in on the recipe's login page and sees the executors on the dashboard; a bearer token of the configured issuer is
/// accepted by the JSON API (as curl sends it); an anonymous browser is sent to the login page, not given a 401.
/// The two regions below are the page's snippet verbatim (BoundedWork.Docs.Tests checks it).
/// </summary>
public sealed class SignInRecipeTests
{
    private const string Password = "correct horse battery staple";
    private const string Issuer = "dotnet-user-jwts";
    private const string Audience = "http://localhost:5000";
    private static readonly byte[] SigningKey = RandomNumberGenerator.GetBytes(32);

    [Fact]
    public async Task CookieSignIn_AsDocumented_ShowsTheExecutorsOnTheDashboard()
    {
        await using var app = await StartAsync();
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await (await browser.NewContextAsync()).NewPageAsync();

        // An anonymous browser is sent to the sign-in page, not given a JSON 401.
        await page.GotoAsync(new Uri(BaseAddress(app), "/bounded-work/").ToString());
        Assert.Equal("/login", new Uri(page.Url).AbsolutePath);

        await page.Locator("input[name=password]").FillAsync(Password);
        await page.Locator("button").ClickAsync();

        await Assertions.Expect(page.Locator("tr[data-executor='payments']")).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal("/bounded-work/", new Uri(page.Url).AbsolutePath);

        // The rates say over which window they are averaged.
        await Assertions.Expect(page.Locator("thead").First).ToContainTextAsync("Completed / s, 1 min avg");
    }

    /// <summary>
    /// An app that signs in with bearer tokens only: a browser opening the dashboard gets the page (with the 401 status
    /// and no data), which asks for a token; with it, the page shows the executors.
    /// </summary>
    [Fact]
    public async Task BearerOnlyApp_Dashboard_AsksForAToken_ThenShowsTheExecutors()
    {
        await using var app = await StartAsync(bearerOnly: true);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await (await browser.NewContextAsync()).NewPageAsync();

        var response = await page.GotoAsync(new Uri(BaseAddress(app), "/bounded-work/").ToString());

        Assert.Equal(401, response!.Status);
        await Assertions.Expect(page.Locator("#token-sign-in")).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await page.Locator("#token").FillAsync(Token("ops"));
        await page.Locator("#token-use").ClickAsync();
        await Assertions.Expect(page.Locator("tr[data-executor='payments']")).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(page.Locator("#token-sign-in")).ToBeHiddenAsync();
    }

    /// <summary>
    /// What an operator pastes carelessly: a token that is not one (non-ASCII) is refused with a message and the page
    /// keeps asking; the header's own "Bearer " prefix and spaces of a wrapped line are dropped, and the token works.
    /// </summary>
    [Fact]
    public async Task BearerOnlyApp_Dashboard_RefusesATokenItCannotSend_AcceptsOnePastedWithItsPrefix()
    {
        await using var app = await StartAsync(bearerOnly: true);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await (await browser.NewContextAsync()).NewPageAsync();
        await page.GotoAsync(new Uri(BaseAddress(app), "/bounded-work/").ToString());
        var patience = new LocatorAssertionsToBeVisibleOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        await Assertions.Expect(page.Locator("#token-sign-in")).ToBeVisibleAsync(patience);

        await page.Locator("#token").FillAsync("jeton-é");
        await page.Locator("#token-use").ClickAsync();
        await Assertions.Expect(page.Locator("#token-error")).ToContainTextAsync("Not a bearer token");
        await Assertions.Expect(page.Locator("#token-sign-in")).ToBeVisibleAsync(patience);

        var token = Token("ops");
        await page.Locator("#token").FillAsync("Bearer " + token[..10] + " " + token[10..]);
        await page.Locator("#token-use").ClickAsync();
        await Assertions.Expect(page.Locator("tr[data-executor='payments']")).ToBeVisibleAsync(patience);
        await Assertions.Expect(page.Locator("#token-sign-in")).ToBeHiddenAsync();
    }

    [Fact]
    public async Task BearerOnlyApp_AnonymousJsonRequest_StillGetsTheProblem()
    {
        await using var app = await StartAsync(bearerOnly: true);
        using var client = new HttpClient { BaseAddress = BaseAddress(app) };

        using var response = await client.GetAsync("/bounded-work/");

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
    }

    [Fact]
    public async Task CookieSignIn_WrongPassword_StaysOnTheLoginPage()
    {
        await using var app = await StartAsync();
        using var client = new HttpClient(new HttpClientHandler { AllowAutoRedirect = false }) { BaseAddress = BaseAddress(app) };

        using var response = await client.PostAsync("/login", new FormUrlEncodedContent([new("password", "guess")]));

        Assert.Equal(HttpStatusCode.Redirect, response.StatusCode);
        Assert.Equal("/login?failed", response.Headers.Location!.OriginalString);
        Assert.False(response.Headers.Contains("Set-Cookie"));
    }

    [Fact]
    public async Task BearerToken_AsDocumented_ReadsTheExecutors()
    {
        await using var app = await StartAsync();
        using var client = new HttpClient { BaseAddress = BaseAddress(app) };
        client.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", Token("ops"));

        using var response = await client.GetAsync("/bounded-work/executors");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Contains("\"payments\"", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task BearerToken_WithoutTheRole_Gets403()
    {
        await using var app = await StartAsync();
        using var client = new HttpClient(new HttpClientHandler { AllowAutoRedirect = false }) { BaseAddress = BaseAddress(app) };
        client.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", Token("viewer"));

        using var response = await client.GetAsync("/bounded-work/executors");

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
    }

    private static Uri BaseAddress(WebApplication app) => new(app.Urls.Single());

    /// <summary>A token as <c>dotnet user-jwts create --role ...</c> issues one: its issuer, audience and a symmetric key.</summary>
    private static string Token(string role) => new JwtSecurityTokenHandler().WriteToken(new JwtSecurityToken(
        Issuer,
        Audience,
        [new Claim(ClaimTypes.Name, "ci"), new Claim(ClaimTypes.Role, role)],
        expires: DateTime.UtcNow.AddHours(1),
        signingCredentials: new SigningCredentials(new SymmetricSecurityKey(SigningKey), SecurityAlgorithms.HmacSha256)));

    private static async Task<WebApplication> StartAsync(bool bearerOnly = false)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Development" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Operators:Password"] = Password,
            // What dotnet user-jwts writes to appsettings.Development.json and the user secrets.
            ["Authentication:Schemes:Bearer:ValidIssuer"] = Issuer,
            ["Authentication:Schemes:Bearer:ValidAudiences:0"] = Audience,
            ["Authentication:Schemes:Bearer:SigningKeys:0:Issuer"] = Issuer,
            ["Authentication:Schemes:Bearer:SigningKeys:0:Value"] = Convert.ToBase64String(SigningKey),
        });
        builder.Services.AddBoundedExecutor("payments");
        if (bearerOnly)
        {
            builder.Services.AddBoundedWorkAdmin();
            builder.Services.AddAuthentication(JwtBearerDefaults.AuthenticationScheme).AddJwtBearer();
            builder.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.RequireRole("ops")));
        }
        else
        {
            ConfigureServices(builder);
        }

        var app = builder.Build();
        if (bearerOnly)
        {
            app.UseAuthentication();
            app.UseAuthorization();
            app.MapBoundedWorkAdmin();
        }
        else
        {
            MapEndpoints(app);
        }

        await app.StartAsync();
        return app;
    }

    private static void ConfigureServices(WebApplicationBuilder builder)
    {
        #region recipe-services
        builder.Services.AddBoundedWorkAdmin();

        // Who may operate executors. Browsers sign in with a cookie; curl and scripts send a bearer token; the default
        // scheme picks one per request. An operator is anyone with the role "ops".
        builder.Services.AddAuthentication("CookieOrBearer")
            .AddPolicyScheme("CookieOrBearer", "Cookie or bearer token", o => o.ForwardDefaultSelector = context =>
                context.Request.Headers.Authorization.ToString().StartsWith("Bearer ", StringComparison.OrdinalIgnoreCase)
                    ? JwtBearerDefaults.AuthenticationScheme
                    : CookieAuthenticationDefaults.AuthenticationScheme)
            .AddCookie(o => o.LoginPath = "/login")
            .AddJwtBearer(); // issuer, audience and keys from Authentication:Schemes:Bearer (dotnet user-jwts writes them)
        builder.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.RequireRole("ops")));
        #endregion
    }

    private static void MapEndpoints(WebApplication app)
    {
        #region recipe-endpoints
        app.UseAuthentication();
        app.UseAuthorization();
        app.MapBoundedWorkAdmin(); // the JSON API and the dashboard under /bounded-work

        // A sign-in page for the operators' browsers: one password from configuration (Operators:Password).
        app.MapGet("/login", () => Results.Content("""
            <form method="post"><input type="password" name="password" autofocus> <button>Sign in</button></form>
            """, "text/html"));
        app.MapPost("/login", async (HttpContext context, IConfiguration configuration) =>
        {
            var password = (await context.Request.ReadFormAsync())["password"].ToString();
            var expected = configuration["Operators:Password"];
            if (string.IsNullOrEmpty(expected)
                || !CryptographicOperations.FixedTimeEquals(Encoding.UTF8.GetBytes(password), Encoding.UTF8.GetBytes(expected)))
            {
                return Results.Redirect("/login?failed");
            }

            Claim[] claims = [new(ClaimTypes.Name, "operator"), new(ClaimTypes.Role, "ops")];
            await context.SignInAsync(
                CookieAuthenticationDefaults.AuthenticationScheme,
                new ClaimsPrincipal(new ClaimsIdentity(claims, CookieAuthenticationDefaults.AuthenticationScheme)));
            return Results.Redirect("/bounded-work/");
        });
        #endregion
    }
}
